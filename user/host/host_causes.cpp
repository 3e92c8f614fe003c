#include "host/host_causes.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "core/format.h"

namespace slowburn {

namespace {

using Measure = std::function<std::optional<double>(const HostInterval&)>;

std::optional<double> median(std::vector<double> values) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// The median of the measure over every rank but `self`; nullopt when no peer has it.
std::optional<double> peers_median(const std::vector<HostInterval>& ranks, size_t self, const Measure& measure) {
  std::vector<double> values;
  for (size_t i = 0; i < ranks.size(); ++i)
    if (i != self)
      if (auto v = measure(ranks[i])) values.push_back(*v);
  return median(std::move(values));
}

// At the threshold, and `factor` times the peers' (no peers: the threshold alone).
bool stands_out(double value, double threshold, std::optional<double> peers, double factor) {
  return value >= threshold && (!peers || value >= factor * *peers);
}

std::string percent(double share) { return fmt::format("{:.0f}%", share * 100); }

std::string peers_words(std::optional<double> peers) {
  return peers ? fmt::format("peers' median {}", percent(*peers)) : "no peer on this node to compare";
}

std::optional<double> throttled_share(const HostInterval& r) {
  if (!r.throttling) return std::nullopt;
  if (r.throttling->nr_periods == 0) return 0.0;  // no quota ran out: a peer that was never throttled
  return static_cast<double>(r.throttling->nr_throttled) / static_cast<double>(r.throttling->nr_periods);
}

std::optional<double> runq_share(const HostInterval& r) {
  if (!r.sched) return std::nullopt;
  double waited = static_cast<double>(r.sched->off(OffCpuReason::runnable));
  double wanted = waited + static_cast<double>(r.sched->oncpu_ns);
  return wanted > 0 ? std::optional<double>(waited / wanted) : std::nullopt;
}

// Waiting per unit of running: unbounded, so a rank that waits 97% of the
// time stands out from peers that wait 75% (odds 32 against 3), where the
// shares alone (0.97 against 0.75) would not.
std::optional<double> runq_odds(const HostInterval& r) {
  if (!r.sched) return std::nullopt;
  double waited = static_cast<double>(r.sched->off(OffCpuReason::runnable));
  double ran = std::max(static_cast<double>(r.sched->oncpu_ns), 1e6);  // 1 ms: a rank that never ran is still finite
  return waited / ran;
}

Measure span_share(OffCpuReason reason) {
  return [reason](const HostInterval& r) -> std::optional<double> {
    if (!r.sched || r.span_ns == 0) return std::nullopt;
    return static_cast<double>(r.sched->off(reason)) / static_cast<double>(r.span_ns);
  };
}

std::optional<double> major_faults(const HostInterval& r) {
  return r.major_faults ? std::optional<double>(static_cast<double>(*r.major_faults)) : std::nullopt;
}

HostCause cause_of(const HostInterval& r, std::string type, double value, std::optional<double> peers) {
  HostCause c;
  c.pid = r.rank.pid;
  c.rank = r.rank.rank;
  c.type = std::move(type);
  c.value = value;
  c.peers_value = peers;
  c.span_ns = r.span_ns;
  c.end_ns = r.end_ns;
  return c;
}

// The process that held the rank's CPUs longest while it waited, and on which CPU most.
struct TopShare {
  int32_t pid = 0;
  uint64_t ns = 0;
  uint32_t cpu = 0;
  std::string comm;
  size_t others = 0;       // the other processes that held its CPUs while it waited
  uint64_t others_ns = 0;  // and how much of its waits they overlapped
};
std::optional<TopShare> top_share(const HostInterval& r) {
  std::map<int32_t, TopShare> by_pid;
  std::map<int32_t, uint64_t> best_cpu_ns;
  for (const CpuShare& s : r.shares) {
    TopShare& t = by_pid[s.other_pid];
    t.pid = s.other_pid;
    t.ns += s.ns;
    if (t.comm.empty()) t.comm = s.comm;
    if (s.ns > best_cpu_ns[s.other_pid]) {
      best_cpu_ns[s.other_pid] = s.ns;
      t.cpu = s.cpu;
    }
  }
  std::optional<TopShare> best;
  uint64_t total_ns = 0;
  for (const auto& [pid, t] : by_pid) {
    total_ns += t.ns;
    if (!best || t.ns > best->ns) best = t;
  }
  if (best) {
    best->others = by_pid.size() - 1;
    best->others_ns = total_ns - best->ns;
  }
  return best;
}

std::string process_words(int32_t pid, const std::string& comm, const std::vector<HostInterval>& ranks) {
  for (const HostInterval& r : ranks)
    if (r.rank.pid == pid) return rank_label(r.rank);
  return comm.empty() ? fmt::format("pid {}", pid) : fmt::format("pid {} ({})", pid, comm);
}

}  // namespace

std::vector<HostCause> judge_host(const std::vector<HostInterval>& ranks, const HostThresholds& t) {
  std::vector<HostCause> causes;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const HostInterval& r = ranks[i];
    std::string who = rank_label(r.rank);
    double span_s = static_cast<double>(r.span_ns) / 1e9;
    bool throttled = false;

    // Its cgroup's CPU quota: the CFS periods in which it ran out.
    if (auto share = throttled_share(r); share && r.throttling->nr_periods >= t.min_periods) {
      auto peers = peers_median(ranks, i, throttled_share);
      if (stands_out(*share, t.throttled_share, peers, t.versus_peers)) {
        HostCause c = cause_of(r, "host.cpu_throttled", *share, peers);
        c.label = "cgroup " + r.cgroup;
        std::string quota = r.quota && r.quota->cpus() ? fmt::format("quota {} of a CPU", percent(*r.quota->cpus()))
                                                       : std::string("no quota of its own: a parent's");
        c.summary = fmt::format(
            "{}'s cgroup {} throttled it in {} of {} ms periods ({} of {}; {}; {} throttled in {:.1f} s; {})", who,
            r.cgroup, percent(*share), r.quota ? r.quota->period_us / 1000 : 100, r.throttling->nr_throttled,
            r.throttling->nr_periods, quota, format_ns(static_cast<double>(r.throttling->throttled_ns)), span_s,
            peers_words(peers));
        causes.push_back(std::move(c));
        throttled = true;
      }
    }

    // Runnable but not running: the CPU went to someone else. Under a
    // throttled quota that is the quota's doing, said above.
    if (auto share = runq_share(r); share && !throttled && span_s > 0) {
      auto peers = peers_median(ranks, i, runq_share);
      auto peers_odds = peers_median(ranks, i, runq_odds);
      auto peers_waited = peers_median(ranks, i, span_share(OffCpuReason::runnable));
      double waited_ns = static_cast<double>(r.sched->off(OffCpuReason::runnable));
      double waited_share = waited_ns / static_cast<double>(r.span_ns);
      if (stands_out(*share, t.runq_share, std::nullopt, 1) &&
          stands_out(*runq_odds(r), 0, peers_odds, t.versus_peers) && waited_share >= 0.05 &&
          waited_share >= peers_waited.value_or(0) + t.runq_excess_share) {
        HostCause c = cause_of(r, "host.cpu_contention", *share, peers);
        std::string with;
        if (auto top = top_share(r)) {
          c.other_pid = top->pid;
          c.other_comm = top->comm;
          c.label = fmt::format("CPU {}", top->cpu);
          with = fmt::format(": shares CPU {} with {}, {} of its waits", top->cpu,
                             process_words(top->pid, top->comm, ranks), format_ns(static_cast<double>(top->ns)));
          // Several contenders (a data loader's workers): the one named is
          // the largest, and the rest are counted, not hidden.
          if (top->others > 0)
            with += fmt::format("; {} other process{} {}", top->others, top->others == 1 ? "" : "es",
                                format_ns(static_cast<double>(top->others_ns)));
        }
        std::string pressure =
            r.cpu_pressure ? fmt::format("; its cgroup's cpu.pressure: some {}", percent(*r.cpu_pressure)) : "";
        c.summary =
            fmt::format("{} was runnable but not running {} of the time it wanted a CPU ({} in {:.1f} s; {}){}{}", who,
                        percent(*share), format_ns(waited_ns), span_s, peers_words(peers), pressure, with);
        causes.push_back(std::move(c));
      }
    }

    // Blocked in the kernel: I/O, or page faults.
    auto blocked = [&](OffCpuReason reason, const char* type, double threshold) {
      Measure m = span_share(reason);
      auto share = m(r);
      if (!share) return;
      auto peers = peers_median(ranks, i, m);
      if (!stands_out(*share, threshold, peers, t.versus_peers)) return;
      HostCause c = cause_of(r, type, *share, peers);
      std::string faults =
          reason == OffCpuReason::fault && r.major_faults ? fmt::format(", {} major page faults", *r.major_faults) : "";
      std::string pressure = reason == OffCpuReason::io && r.io_pressure
                                 ? fmt::format("; its cgroup's io.pressure: some {}", percent(*r.io_pressure))
                                 : "";
      c.summary = fmt::format("{} was {} {} of the time ({} in {:.1f} s{}; {}){}", who, off_cpu_words(reason),
                              percent(*share), format_ns(static_cast<double>(r.sched->off(reason))), span_s, faults,
                              peers_words(peers), pressure);
      causes.push_back(std::move(c));
    };
    blocked(OffCpuReason::io, "host.blocked_io", t.blocked_share);
    blocked(OffCpuReason::fault, "host.page_faults", t.fault_share);
    bool fault_time = !causes.empty() && causes.back().type == "host.page_faults" && causes.back().pid == r.rank.pid;

    // Major faults counted without the sched program (or below its share).
    if (auto n = major_faults(r); n && !fault_time && *n >= static_cast<double>(t.min_major_faults)) {
      auto peers = peers_median(ranks, i, major_faults);
      if (!peers || *n >= 5 * (*peers + 1)) {
        HostCause c = cause_of(r, "host.page_faults", *n, peers);
        c.summary = fmt::format("{} took {:.0f} major page faults in {:.1f} s ({:.0f}/s; {})", who, *n, span_s,
                                span_s > 0 ? *n / span_s : 0.0,
                                peers ? fmt::format("peers' median {:.0f}", *peers) : peers_words(peers));
        causes.push_back(std::move(c));
      }
    }

    // Pushed out to swap while it ran: the kernel reclaims this rank's
    // memory (its faults back in are counted above as major faults).
    if (r.swapped_out_kb && *r.swapped_out_kb >= t.min_swapped_out_kb) {
      Measure m = [](const HostInterval& x) -> std::optional<double> {
        return x.swapped_out_kb ? std::optional<double>(static_cast<double>(*x.swapped_out_kb)) : std::nullopt;
      };
      double grew = static_cast<double>(*r.swapped_out_kb);
      auto peers = peers_median(ranks, i, m);
      if (stands_out(grew, 0, peers, t.versus_peers)) {
        HostCause c = cause_of(r, "host.swap", grew * 1024, peers ? std::optional<double>(*peers * 1024) : peers);
        c.summary =
            fmt::format("{} had {} more of its memory pushed to swap in {:.1f} s ({} in swap now; {})", who,
                        format_bytes(grew * 1024), span_s, format_bytes(static_cast<double>(*r.swap_kb) * 1024),
                        peers ? fmt::format("peers' median +{}", format_bytes(*peers * 1024)) : peers_words(peers));
        causes.push_back(std::move(c));
      }
    }

    // Its TCP sockets retransmitting: the collective's data over them
    // waits a retransmission timeout or a recovery each time.
    // Judged where it sent data: a rank (or a kernel before 4.19) with no
    // bytes counted has no share, and is no peer to compare with.
    if (r.tcp_retrans && *r.tcp_retrans >= t.min_tcp_retrans && r.tcp_bytes_sent > 0) {
      Measure share = [](const HostInterval& x) -> std::optional<double> {
        if (!x.tcp_retrans || x.tcp_bytes_sent == 0) return std::nullopt;
        return static_cast<double>(x.tcp_bytes_retrans) / static_cast<double>(x.tcp_bytes_sent);
      };
      double n = static_cast<double>(*r.tcp_retrans);
      double lost = *share(r);
      auto peers = peers_median(ranks, i, share);
      if (stands_out(lost, t.tcp_retrans_share, peers, t.versus_peers)) {
        HostCause c = cause_of(r, "host.tcp_retrans", lost, peers);
        c.summary = fmt::format(
            "{}'s TCP sockets retransmitted {:.0f} segments in {:.1f} s, {:.1f}% of the {} they sent ({}), over {} "
            "socket(s), smoothed RTT up to {}",
            who, n, span_s, lost * 100, format_bytes(static_cast<double>(r.tcp_bytes_sent)),
            peers ? fmt::format("peers' median {:.1f}%", *peers * 100) : peers_words(peers), r.tcp_sockets,
            format_ns(static_cast<double>(r.tcp_max_rtt_us) * 1000));
        causes.push_back(std::move(c));
      }
    }

    // Its memory cgroup at its limit, or killing.
    auto event = [&](const char* key) {
      auto it = r.memory_events.find(key);
      return it == r.memory_events.end() ? uint64_t{0} : it->second;
    };
    if (uint64_t kills = event("oom_kill")) {
      HostCause c = cause_of(r, "host.oom_kill", static_cast<double>(kills), std::nullopt);
      c.label = "cgroup " + r.cgroup;
      c.summary =
          fmt::format("{}'s memory cgroup killed {} process(es) for memory (oom_kill) in {:.1f} s", who, kills, span_s);
      causes.push_back(std::move(c));
    }
    uint64_t at_limit = event("max") + event("high") + event("failcnt");
    if (at_limit > 0) {
      Measure m = [](const HostInterval& x) -> std::optional<double> {
        double n = 0;
        for (const char* k : {"max", "high", "failcnt"})
          if (auto it = x.memory_events.find(k); it != x.memory_events.end()) n += static_cast<double>(it->second);
        return n;
      };
      auto peers = peers_median(ranks, i, m);
      if (!peers || static_cast<double>(at_limit) >= t.versus_peers * (*peers + 1)) {
        HostCause c = cause_of(r, "host.memory_limit", static_cast<double>(at_limit), peers);
        c.label = "cgroup " + r.cgroup;
        std::string pressure =
            r.memory_pressure ? fmt::format("; memory.pressure: some {}", percent(*r.memory_pressure)) : "";
        c.summary =
            fmt::format("{}'s memory cgroup {} was at its limit {} times in {:.1f} s (memory.high {}, max {}){}", who,
                        r.cgroup, at_limit, span_s, event("high"), event("max") + event("failcnt"), pressure);
        causes.push_back(std::move(c));
      }
    }
  }

  // Its every TCP connection slow: the delay is on its link, not a peer's
  // (host/tcp_paths.h). value: its fastest connection's RTT, in seconds.
  std::vector<std::vector<TcpEnd>> ends;
  for (const HostInterval& r : ranks) ends.push_back(r.tcp_ends);
  for (const TcpPathJudgement& j : judge_tcp_paths(ends, t.tcp_paths)) {
    const HostInterval& r = ranks[j.index];
    HostCause c = cause_of(r, "host.tcp_rtt", j.fastest_us / 1e6, j.peers_fastest_us / 1e6);
    c.label = "TCP connections";
    c.summary = fmt::format(
        "{}'s TCP connections took {} a round trip at the fastest of its {} with data in {:.1f} s (smoothed RTT; "
        "to {}); the node's other ranks' fastest: median {}",
        rank_label(r.rank), format_ns(j.fastest_us * 1e3), j.connections, static_cast<double>(r.span_ns) / 1e9,
        fmt::join(j.remotes, ", "), format_ns(j.peers_fastest_us * 1e3));
    causes.push_back(std::move(c));
  }
  drop_round_trips_beside_loss(causes);
  return causes;
}

void drop_round_trips_beside_loss(std::vector<HostCause>& causes) {
  // InsideCollective's lossy link on a node with a busy process beside the
  // job: rank 1 retransmitting 14% of its bytes, and rank 2, a ring
  // neighbour, named by its connections at 3.8 ms against 86 us.
  bool losing =
      std::any_of(causes.begin(), causes.end(), [](const HostCause& c) { return c.type == "host.tcp_retrans"; });
  if (losing) std::erase_if(causes, [](const HostCause& c) { return c.type == "host.tcp_rtt"; });
}

}  // namespace slowburn
