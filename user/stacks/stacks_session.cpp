#include "stacks/stacks_session.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <thread>

#include "comm/comm_registry.h"

namespace slowburn {

namespace {

using nlohmann::json;

json frames_json(const std::vector<StackFrame>& frames) {
  json out = json::array();
  for (const StackFrame& f : frames)
    out.push_back({{"pc", f.pc}, {"symbol", f.symbol}, {"module", f.module}, {"offset", f.offset}});
  return out;
}

json or_null(const std::string& text) { return text.empty() ? json(nullptr) : json(text); }

json python_json(const PythonStack& py) {
  if (!py.python) return nullptr;
  json out = json::array();
  for (const PythonFrame& f : py.frames) out.push_back({{"function", f.function}, {"file", f.file}, {"line", f.line}});
  return out;
}

// The communicator each rank inside an MPI or gloo collective called it on,
// read from the words its stack holds (stacks/stack_comm.h) by the
// communicator reader: the communicator the candidates name most often,
// over the samples taken in the last sample's collective (one sample caught
// deep in the progress engine may hold no handle in the frame's words: seen
// once in 156 runs of a 2-D MPICH job); none when two are named equally
// often. NCCL ranks keep theirs unread: NCCL's calls return once enqueued,
// so a stuck NCCL rank waits outside them, and its ncclComm is internal.
void name_communicators(std::vector<RankSamples>& ranks, const std::vector<RankIdentity>& identities,
                        std::vector<std::string>& notes) {
  CommRegistry registry = CommRegistry::for_processes("/proc");
  for (const RankIdentity& r : identities) registry.add_rank(r);
  for (RankSamples& r : ranks) {
    if (r.samples.empty()) continue;
    RankSample& s = r.samples.back();
    bool mpi = s.probe.starts_with("mpi."), gloo = s.probe == kGlooWorkProbe || s.probe.starts_with("gloo.");
    if (!mpi && !gloo) continue;
    std::map<std::string, std::pair<int, CommunicatorRef>> votes;  // by key
    // The run of samples at the end inside that collective: an earlier
    // call of the same function may have been on another communicator. A
    // gloo work's frame is the same for every work of every process group:
    // the last sample alone.
    size_t voters = 0;
    for (auto taken = r.samples.rbegin();
         taken != r.samples.rend() && taken->probe == s.probe && (s.probe != kGlooWorkProbe || voters == 0);
         ++taken, ++voters) {
      for (const CommCandidate& c : taken->comm_candidates) {
        auto comm = mpi ? registry.read_mpi_value(r.pid, c.value) : registry.read_gloo_value(r.pid, c.value);
        if (!comm) continue;
        auto& [seen, ref] = votes[(*comm)->key];
        seen += c.seen;
        ref = *comm;
      }
    }
    const CommunicatorRef* best = nullptr;
    int best_seen = 0;
    bool tie = false;
    for (const auto& [key, vote] : votes) {
      if (vote.first == best_seen) tie = true;
      if (vote.first > best_seen) best = &vote.second, best_seen = vote.first, tie = false;
    }
    if (!best || tie) continue;
    s.communicator = (*best)->label;
    s.comm_key = (*best)->key;
    s.comm_members = (*best)->members;
  }
  for (std::string& n : registry.take_notes()) notes.push_back(std::move(n));
}

}  // namespace

StacksSnapshot take_stacks(const std::vector<RankIdentity>& ranks, const StacksOptions& options) {
  StacksSnapshot out;
  out.samples = options.samples;
  out.interval_s = options.interval_s;
  std::map<int32_t, RankSamples> by_pid;
  for (const RankIdentity& r : ranks) by_pid[r.pid] = {r.rank, r.pid, {}};
  uint64_t held_ns = 0;
  size_t reads = 0;
  for (int i = 0; i < options.samples; ++i) {
    if (i) std::this_thread::sleep_for(std::chrono::duration<double>(options.interval_s));
    for (const RankIdentity& r : ranks) {
      if (!by_pid.contains(r.pid)) continue;
      auto sample = sample_rank(r, "/proc");
      if (!sample) {
        out.notes.push_back(fmt::format("rank {} (pid {}): {}", r.rank, r.pid, sample.error().message));
        by_pid.erase(r.pid);
        continue;
      }
      if (!sample->unwind_error.empty() && sample->frames.empty() && i == 0)
        out.notes.push_back(fmt::format("rank {} (pid {}): no stack: {}", r.rank, r.pid, sample->unwind_error));
      held_ns += sample->held_ns;
      ++reads;
      by_pid[r.pid].samples.push_back(std::move(*sample));
    }
  }
  // Python ranks: their main thread's Python frames, read without stopping them.
  for (auto& [pid, r] : by_pid) {
    if (r.samples.empty()) continue;
    PythonStack& py = r.samples.back().python;
    py = read_python_stack("/proc", pid, pid);
    if (py.python && py.frames.empty())
      out.notes.push_back(
          fmt::format("rank {} (pid {}) runs Python; its Python frames were not read: {}", r.rank, pid, py.error));
  }
  for (auto& [pid, r] : by_pid) out.ranks.push_back(std::move(r));
  std::sort(out.ranks.begin(), out.ranks.end(),
            [](const RankSamples& a, const RankSamples& b) { return a.rank < b.rank; });
  name_communicators(out.ranks, ranks, out.notes);
  out.groups = group_ranks(out.ranks);
  out.stuck = find_stuck(out.ranks);
  out.held_ms_per_read = reads ? static_cast<double>(held_ns) / 1e6 / static_cast<double>(reads) : 0;
  return out;
}

std::vector<json> stack_lines(const StacksSnapshot& snapshot) {
  std::map<int, int> group_of;
  for (size_t g = 0; g < snapshot.groups.size(); ++g)
    for (int rank : snapshot.groups[g].ranks) group_of[rank] = static_cast<int>(g);
  std::vector<json> lines;
  for (const RankSamples& r : snapshot.ranks) {
    if (r.samples.empty()) continue;
    const RankSample& s = r.samples.back();
    json j{{"kind", "stack"},
           {"rank", r.rank},
           {"pid", r.pid},
           {"tid", s.tid},
           {"state", std::string(1, s.process.state)},
           {"cpu_share", r.cpu_share()},
           {"syscall", s.process.syscall_name},
           {"wchan", s.process.wchan},
           {"waits_on", s.process.waits_on},
           {"kernel_stack", s.process.kernel_stack},
           {"collective", or_null(s.probe)},
           {"symbol", or_null(s.symbol)},
           {"communicator",
            s.communicator.empty() ? json(nullptr) : json{{"name", s.communicator}, {"members", s.comm_members}}},
           {"frames", frames_json(s.frames)},
           {"group", group_of[r.rank]}};
    if (!s.unwind_error.empty()) j["unwind_error"] = s.unwind_error;
    j["python"] = python_json(s.python);
    if (!s.python.error.empty()) j["python_error"] = s.python.error;
    lines.push_back(std::move(j));
  }
  return lines;
}

json finding_json(const StuckFinding& f) {
  return {{"kind", "finding"},
          {"type", "stuck"},
          {"rank", f.rank},
          {"pid", f.pid},
          {"summary", f.summary},
          {"evidence",
           {{"why", f.kind},
            {"waiting_ranks", f.waiting_ranks},
            {"waiting_in", f.waiting_in},
            {"waiting_on", or_null(f.waiting_on)}}}};
}

json summary_json(const StacksSnapshot& s) {
  return {{"kind", "summary"},
          {"ranks", s.ranks.size()},
          {"groups", s.groups.size()},
          {"samples", s.samples},
          {"interval_s", s.interval_s},
          {"stuck", s.stuck.size()},
          {"ptrace_held_ms_per_read", s.held_ms_per_read}};
}

}  // namespace slowburn
