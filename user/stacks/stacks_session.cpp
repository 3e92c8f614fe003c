#include "stacks/stacks_session.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <thread>

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
  std::vector<std::string> python;
  for (const RankIdentity& r : ranks)
    if (r.command.find("python") != std::string::npos) python.push_back(std::to_string(r.rank));
  if (!python.empty())
    out.notes.push_back(
        fmt::format("rank(s) {} run Python: their native stacks are shown, down to the collective; "
                    "their Python frames are not read (py-spy dump --pid PID reads them)",
                    fmt::join(python, ", ")));
  for (auto& [pid, r] : by_pid) out.ranks.push_back(std::move(r));
  std::sort(out.ranks.begin(), out.ranks.end(),
            [](const RankSamples& a, const RankSamples& b) { return a.rank < b.rank; });
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
           {"frames", frames_json(s.frames)},
           {"group", group_of[r.rank]}};
    if (!s.unwind_error.empty()) j["unwind_error"] = s.unwind_error;
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
          {"evidence", {{"why", f.kind}, {"waiting_ranks", f.waiting_ranks}, {"waiting_in", f.waiting_in}}}};
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
