// slowburn stacks: a snapshot of every rank of a job that may already be
// stuck: each rank's state, CPU, system call and user stack, a few samples
// apart, the ranks grouped by where they sit, and the odd one named.
#include <fmt/format.h>
#include <time.h>
#include <unistd.h>

#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/command.h"
#include "cli/options.h"
#include "core/strings.h"
#include "engine/discover.h"
#include "stacks/stuck.h"

namespace slowburn::cli {

namespace {

struct Args {
  std::vector<int32_t> pids;
  int samples = 3;
  double interval_s = 0.5;
  bool json = false;
  std::string proc_root = "/proc";
};

nlohmann::json frames_json(const std::vector<StackFrame>& frames) {
  nlohmann::json out = nlohmann::json::array();
  for (const StackFrame& f : frames)
    out.push_back({{"pc", f.pc}, {"symbol", f.symbol}, {"module", f.module}, {"offset", f.offset}});
  return out;
}

nlohmann::json stack_json(const RankSamples& r, int group) {
  const RankSample& s = r.samples.back();
  nlohmann::json j{{"kind", "stack"},
                   {"rank", r.rank},
                   {"pid", r.pid},
                   {"tid", s.tid},
                   {"state", std::string(1, s.process.state)},
                   {"cpu_share", r.cpu_share()},
                   {"syscall", s.process.syscall_name},
                   {"wchan", s.process.wchan},
                   {"waits_on", s.process.waits_on},
                   {"kernel_stack", s.process.kernel_stack},
                   {"collective", s.probe.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.probe)},
                   {"symbol", s.symbol.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.symbol)},
                   {"frames", frames_json(s.frames)},
                   {"group", group}};
  if (!s.unwind_error.empty()) j["unwind_error"] = s.unwind_error;
  return j;
}

nlohmann::json finding_json(const StuckFinding& f) {
  return {{"kind", "finding"},
          {"type", "stuck"},
          {"rank", f.rank},
          {"pid", f.pid},
          {"summary", f.summary},
          {"evidence", {{"why", f.kind}, {"waiting_ranks", f.waiting_ranks}, {"waiting_in", f.waiting_in}}}};
}

// Every sample of every rank; a rank that exits is dropped with a note.
std::vector<RankSamples> take_samples(const std::vector<RankIdentity>& ranks, const Args& a,
                                      std::vector<std::string>& notes, uint64_t& held_ns) {
  std::map<int32_t, RankSamples> by_pid;
  for (const RankIdentity& r : ranks) by_pid[r.pid] = {r.rank, r.pid, {}};
  for (int i = 0; i < a.samples; ++i) {
    if (i) std::this_thread::sleep_for(std::chrono::duration<double>(a.interval_s));
    for (const RankIdentity& r : ranks) {
      if (!by_pid.contains(r.pid)) continue;
      auto sample = sample_rank(r, a.proc_root);
      if (!sample) {
        notes.push_back(fmt::format("rank {} (pid {}): {}", r.rank, r.pid, sample.error().message));
        by_pid.erase(r.pid);
        continue;
      }
      if (!sample->unwind_error.empty() && sample->frames.empty())
        notes.push_back(fmt::format("rank {} (pid {}): no stack: {}", r.rank, r.pid, sample->unwind_error));
      held_ns += sample->held_ns;
      by_pid[r.pid].samples.push_back(std::move(*sample));
    }
  }
  std::vector<RankSamples> out;
  for (auto& [pid, r] : by_pid) out.push_back(std::move(r));
  std::sort(out.begin(), out.end(), [](const RankSamples& a, const RankSamples& b) { return a.rank < b.rank; });
  return out;
}

int run(const Args& a) {
  auto ranks = find_ranks(a.pids, a.proc_root);
  if (!ranks) return fail(ranks.error());
  std::vector<std::string> notes;
  uint64_t held_ns = 0;
  std::vector<RankSamples> sampled = take_samples(*ranks, a, notes, held_ns);
  std::vector<StackGroup> groups = group_ranks(sampled);
  std::vector<StuckFinding> stuck = find_stuck(sampled);
  size_t reads = 0;
  for (const RankSamples& r : sampled) reads += r.samples.size();
  double held_ms = reads ? static_cast<double>(held_ns) / 1e6 / static_cast<double>(reads) : 0;
  if (a.json) {
    std::map<int, int> group_of;
    for (size_t g = 0; g < groups.size(); ++g)
      for (int rank : groups[g].ranks) group_of[rank] = static_cast<int>(g);
    for (const RankSamples& r : sampled)
      if (!r.samples.empty()) std::cout << stack_json(r, group_of[r.rank]).dump() << '\n';
    for (const StuckFinding& f : stuck) std::cout << finding_json(f).dump() << '\n';
    for (const std::string& n : notes) std::cout << nlohmann::json{{"kind", "note"}, {"text", n}}.dump() << '\n';
    std::cout << nlohmann::json{{"kind", "summary"},
                                {"ranks", sampled.size()},
                                {"groups", groups.size()},
                                {"samples", a.samples},
                                {"interval_s", a.interval_s},
                                {"stuck", stuck.size()},
                                {"ptrace_held_ms_per_read", held_ms}}
                     .dump()
              << '\n';
    return 0;
  }
  std::cout << fmt::format(
      "Snapshot of {} rank(s), {} sample(s) {:.1f} s apart; stacks read under ptrace (each process held {:.1f} ms a "
      "read, then let go)\n",
      sampled.size(), a.samples, a.interval_s, held_ms);
  for (const StackGroup& g : groups) {
    std::vector<std::string> listed;
    for (int r : g.ranks) listed.push_back(std::to_string(r));
    std::cout << fmt::format("\n{} {} ({}): {}, {}\n", g.ranks.size() == 1 ? "rank" : "ranks", join(listed, ", "),
                             g.ranks.size(), g.state, g.where);
    for (size_t i = 0; i < g.frames.size(); ++i) std::cout << fmt::format("    #{:<2} {}\n", i, g.frames[i]);
  }
  for (const std::string& n : notes) std::cout << "note: " << n << '\n';
  std::cout << '\n';
  if (stuck.empty())
    std::cout << "Verdict: no rank holds the others still (the ranks moved between samples, or "
                 "no collective held a clear majority in every sample).\n";
  for (const StuckFinding& f : stuck) std::cout << "FINDING stuck: " << f.summary << '\n';
  return 0;
}

}  // namespace

Command add_stacks_command(CLI::App& app) {
  auto args = std::make_shared<Args>();
  CLI::App* sub = app.add_subcommand(
      "stacks",
      "A snapshot of every rank of a job, even one stuck before slowburn came: each rank's state, CPU, system call "
      "and user stack (unwound through .eh_frame under a brief ptrace stop per read), sampled a few times; ranks "
      "grouped by where they sit, and the odd one named when the rest wait inside one collective in every sample "
      "(stopped, blocked, inside another collective, or running its own code).\n\nExamples:\n"
      "  slowburn stacks                      # every rank on this node\n"
      "  slowburn stacks -p 4242 -p 4243 --json\n"
      "  slowburn stacks --samples 5 -i 1     # a slower job: 5 samples 1 s apart");
  sub->add_option("-p,--pid", args->pids, "A rank's pid (repeat); default: every rank on this node")
      ->check(process_id());
  sub->add_option("--samples", args->samples, "Samples per rank (2 or more to tell a stuck job from a moving one)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  sub->add_option("-i,--interval", args->interval_s, "Seconds between samples")
      ->capture_default_str()
      ->check(seconds(true));
  sub->add_flag("--json", args->json, "JSON lines: one 'stack' per rank, 'finding' per stuck rank, a 'summary'");
  sub->add_option("--procfs-root", args->proc_root, "procfs to read")->capture_default_str()->check(root_directory());
  return {sub, [args] { return run(*args); }};
}

}  // namespace slowburn::cli
