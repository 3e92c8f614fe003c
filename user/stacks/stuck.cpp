#include "stacks/stuck.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "core/strings.h"

namespace slowburn {

namespace {

constexpr size_t kGroupFrames = 16;  // frames that decide a group, from the collective out
constexpr size_t kMaxOdd = 2;        // more odd ranks than this is not "the odd one"

std::string frame_text(const StackFrame& f) {
  std::string name = f.symbol.empty() ? fmt::format("{:#x}", f.pc) : f.symbol;
  return f.module.empty() ? name : fmt::format("{} ({})", name, f.module);
}

// The frames a group is told by: from the collective frame outwards (the
// library's insides differ with progress), the whole stack outside one.
std::vector<std::string> key_frames(const RankSample& s) {
  std::vector<std::string> names;
  bool from_here = s.probe.empty();
  for (const StackFrame& f : s.frames) {
    if (!from_here && collective_probe_of(f.symbol) == s.probe) from_here = true;
    if (from_here) names.push_back(f.symbol.empty() ? f.module : f.symbol);
    if (names.size() >= kGroupFrames) break;
  }
  return names;
}

// Stopped and disk sleep stand apart; running and sleeping inside the same
// call are one way of waiting (spinning or blocking).
std::string state_class(char state) {
  if (state == 'T' || state == 't') return "stopped";
  if (state == 'D') return "disk sleep";
  return "waiting";
}

bool stopped(char state) { return state == 'T' || state == 't'; }

std::string ranks_text(const std::vector<int>& ranks) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + join_numbers(ranks, ", ");
}

// "MPI_Allreduce on MPI_COMM_WORLD": the collective and, when read, its communicator.
std::string call_text(const RankSample& s) {
  return s.communicator.empty() ? s.symbol : s.symbol + " on " + s.communicator;
}

// The collective a rank sat inside in every sample, "" when none or it moved.
std::string steady_collective(const RankSamples& r) {
  if (r.samples.empty()) return {};
  const std::string& first = r.samples.front().symbol;
  for (const RankSample& s : r.samples)
    if (s.symbol != first) return {};
  return first;
}

// Why an odd rank holds the others, when it held still over the samples.
std::optional<StuckFinding> why_odd(const RankSamples& r) {
  const RankSample& last = r.samples.back();
  const ProcessSample& p = last.process;
  StuckFinding f;
  f.rank = r.rank;
  f.pid = r.pid;
  std::string where = last.symbol.empty() ? "outside any collective" : "inside " + call_text(last);
  std::string cpu = fmt::format("{:.0f} ms on CPU in {:.1f} s", r.cpu_share() * static_cast<double>(r.span_ns()) / 1e6,
                                static_cast<double>(r.span_ns()) / 1e9);
  bool all_stopped =
      std::all_of(r.samples.begin(), r.samples.end(), [](const RankSample& s) { return stopped(s.process.state); });
  std::string steady = steady_collective(r);
  if (all_stopped) {
    f.kind = "stopped";
    f.summary = fmt::format("is stopped (state {}, {}) {}", p.state, cpu, where);
  } else if (!steady.empty()) {
    return std::nullopt;  // held inside a collective: one of the waiting
  } else {
    // Outside any collective in every sample: blocked where, or running its own code.
    bool same_call = std::all_of(r.samples.begin(), r.samples.end(), [&](const RankSample& s) {
      return s.symbol.empty() && s.process.syscall == p.syscall;
    });
    if (!same_call) return std::nullopt;
    std::string call =
        p.syscall_name.empty() ? "" : p.syscall_name + (p.waits_on.empty() ? "" : "(" + p.waits_on + ")");
    if (p.state == 'D' || (p.state == 'S' && !call.empty() && r.cpu_share() < 0.05)) {
      f.kind = "blocked";
      f.summary = fmt::format("is blocked {} in {}{}{}, {}", where, call, p.wchan.empty() ? "" : " at " + p.wchan,
                              p.state == 'D' ? " (state D)" : "", cpu);
    } else {
      f.kind = "running";
      f.summary = fmt::format("runs its own code {} ({:.0f}% CPU) in every sample", where, r.cpu_share() * 100);
    }
  }
  return f;
}

// "ranks 0, 2 spin inside MPI_Allreduce and rank 3 inside MPI_Allgather":
// the verb once, after the largest group; spinning when they burn CPU.
std::string waiting_text(std::vector<std::string> where, double cpu) {
  if (where.empty()) return {};
  std::string verb = cpu >= 0.5 ? " spin" : " wait";
  if (where.front().starts_with("rank ")) verb += "s";  // "rank 1 spins", "ranks 0, 2 spin"
  where.front().insert(where.front().find(" inside"), verb);
  return join(where, " and ");
}

using Held = std::map<std::string, std::vector<const RankSamples*>>;  // by call: collective and communicator

// The one rank alone in its call while the others wait in other calls.
// When every communicator was read, only a rank with another member of its
// communicator here, waiting in another call: a communicator whose other
// members are on other nodes may be waiting for them, not mismatched.
const RankSamples* mismatched(const Held& held) {
  if (held.size() < 2) return nullptr;
  bool comms = true;
  for (const auto& [call, members] : held)
    for (const RankSamples* r : members) comms = comms && !r->samples.back().comm_key.empty();
  std::vector<const RankSamples*> alone;
  for (const auto& [call, members] : held) {
    // A gloo work's frame does not say which collective it runs: a rank in a
    // work on another process group than its peers' is how a healthy job
    // with sub-groups runs, not a mismatch.
    if (members.size() != 1 || members.front()->samples.back().probe == kGlooWorkProbe) continue;
    const std::vector<int>& own = members.front()->samples.back().comm_members;
    bool partner = !comms;
    for (const auto& [other_call, others] : held)
      for (const RankSamples* o : others)
        partner = partner || (other_call != call && std::find(own.begin(), own.end(), o->rank) != own.end());
    if (partner) alone.push_back(members.front());
  }
  return alone.size() == 1 ? alone.front() : nullptr;
}

}  // namespace

uint64_t RankSamples::span_ns() const { return samples.size() < 2 ? 0 : samples.back().at_ns - samples.front().at_ns; }

double RankSamples::cpu_share() const {
  uint64_t span = span_ns();
  if (!span) return 0;
  uint64_t cpu = samples.back().process.cpu_ns - samples.front().process.cpu_ns;
  return static_cast<double>(cpu) / static_cast<double>(span);
}

std::string state_word(char state) {
  switch (state) {
    case 'R':
      return "running";
    case 'S':
      return "sleeping";
    case 'D':
      return "disk sleep";
    case 'T':
    case 't':
      return "stopped";
    case 'Z':
      return "zombie";
    default:
      return std::string(1, state);
  }
}

std::vector<StackGroup> group_ranks(const std::vector<RankSamples>& ranks) {
  std::map<std::tuple<std::string, std::string, std::string, std::vector<std::string>>, StackGroup> groups;
  for (const RankSamples& r : ranks) {
    if (r.samples.empty()) continue;
    const RankSample& s = r.samples.back();
    auto key = std::make_tuple(state_class(s.process.state), s.symbol, s.comm_key, key_frames(s));
    StackGroup& g = groups[key];
    if (g.ranks.empty()) {
      g.where = s.symbol.empty() ? "outside any collective"
                                 : fmt::format("inside {} ({}){}", s.symbol, s.probe,
                                               s.communicator.empty() ? "" : " on " + s.communicator);
      g.state = state_word(s.process.state);
      for (const StackFrame& f : s.frames) g.frames.push_back(frame_text(f));
      for (const PythonFrame& f : s.python.frames)
        g.python.push_back(f.line > 0 ? fmt::format("{} ({}:{})", f.function, f.file, f.line)
                                      : fmt::format("{} ({})", f.function, f.file));
    }
    g.ranks.push_back(r.rank);
  }
  std::vector<StackGroup> out;
  for (auto& [key, g] : groups) out.push_back(std::move(g));
  std::sort(out.begin(), out.end(), [](const StackGroup& a, const StackGroup& b) {
    return a.ranks.size() != b.ranks.size() ? a.ranks.size() > b.ranks.size() : a.ranks < b.ranks;
  });
  return out;
}

std::vector<StuckFinding> find_stuck(const std::vector<RankSamples>& ranks) {
  std::vector<StuckFinding> found;
  if (ranks.size() < 2) return found;
  for (const RankSamples& r : ranks)
    if (r.samples.size() < 2) return found;  // one instant says nothing of who moved
  // Held: inside one collective in every sample, and not stopped there;
  // grouped by the call (collective, and communicator where read) they sit in.
  Held held;
  std::vector<const RankSamples*> odd;
  for (const RankSamples& r : ranks) {
    if (!steady_collective(r).empty() && !stopped(r.samples.back().process.state))
      held[call_text(r.samples.back())].push_back(&r);
    else
      odd.push_back(&r);
  }
  size_t holding = ranks.size() - odd.size();
  std::vector<int> waiting_ranks;
  double cpu = 0;
  std::vector<std::string> where;
  const RankSample* most = nullptr;
  size_t most_ranks = 0;
  std::vector<std::pair<std::string, std::vector<const RankSamples*>>> by_size(held.begin(), held.end());
  std::stable_sort(by_size.begin(), by_size.end(),
                   [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
  for (const auto& [call, members] : by_size) {
    std::vector<int> listed;
    for (const RankSamples* r : members) {
      listed.push_back(r->rank);
      waiting_ranks.push_back(r->rank);
      cpu += r->cpu_share() / static_cast<double>(holding);
    }
    where.push_back(fmt::format("{} inside {}", ranks_text(listed), call));
    if (members.size() > most_ranks) most = &members.front()->samples.back(), most_ranks = members.size();
  }
  std::sort(waiting_ranks.begin(), waiting_ranks.end());
  auto name = [&](const RankSamples& r, StuckFinding f, const std::string& others) {
    f.waiting_ranks = waiting_ranks;
    f.waiting_in = most ? most->symbol : "";
    f.waiting_on = most ? most->communicator : "";
    // Spinning (busy-polling MPI) or blocked (gloo, NCCL's host thread) while they wait.
    f.summary = fmt::format("rank {} (pid {}) {}; {} ({:.0f}% CPU)", r.rank, r.pid, f.summary, others, cpu * 100);
    found.push_back(std::move(f));
  };
  if (odd.empty()) {
    // Every rank waits inside a collective: a mismatch when exactly one sits
    // alone in a collective the others are not in.
    const RankSamples* lone = ranks.size() >= 3 ? mismatched(held) : nullptr;
    if (!lone) return found;
    const RankSample& s = lone->samples.back();
    StuckFinding f;
    f.rank = lone->rank;
    f.pid = lone->pid;
    f.kind = "mismatch";
    f.summary =
        fmt::format("is alone inside {} ({}): a collective mismatch", call_text(s), state_word(s.process.state));
    std::erase(waiting_ranks, lone->rank);
    std::erase_if(where, [&](const std::string& w) { return w.ends_with("inside " + call_text(s)); });
    name(*lone, std::move(f), waiting_text(where, cpu));
    return found;
  }
  if (!holding || odd.size() > kMaxOdd || holding < odd.size()) return found;
  for (const RankSamples* r : odd)
    if (auto f = why_odd(*r)) name(*r, std::move(*f), waiting_text(where, cpu));
  return found;
}

}  // namespace slowburn
