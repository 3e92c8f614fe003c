// slowburn stacks: a snapshot of every rank of a job that may already be
// stuck: each rank's state, CPU, system call and user stack, a few samples
// apart, the ranks grouped by where they sit, and the odd one named.
#include <fmt/format.h>
#include <time.h>
#include <unistd.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/options.h"
#include "core/strings.h"
#include "engine/discover.h"
#include "stacks/stacks_session.h"

namespace slowburn::cli {

namespace {

struct Args {
  std::vector<int32_t> pids;
  StacksOptions options;
  bool json = false;
};

int run(const Args& a) {
  auto ranks = find_ranks(a.pids, "/proc");
  if (!ranks) return fail(ranks.error());
  StacksSnapshot s = take_stacks(*ranks, a.options);
  if (a.json) {
    for (const nlohmann::json& line : stack_lines(s)) std::cout << line.dump() << '\n';
    for (const StuckFinding& f : s.stuck) std::cout << finding_json(f).dump() << '\n';
    for (const std::string& n : s.notes) std::cout << nlohmann::json{{"kind", "note"}, {"text", n}}.dump() << '\n';
    std::cout << summary_json(s).dump() << '\n';
    return 0;
  }
  std::cout << fmt::format(
      "Snapshot of {} rank(s), {} sample(s) {:.1f} s apart; stacks read under ptrace (each process held {:.1f} ms a "
      "read, then let go)\n",
      s.ranks.size(), s.samples, s.interval_s, s.held_ms_per_read);
  for (const StackGroup& g : s.groups) {
    std::cout << fmt::format("\n{} {} ({}): {}, {}\n", g.ranks.size() == 1 ? "rank" : "ranks",
                             join_numbers(g.ranks, ", "), g.ranks.size(), g.state, g.where);
    for (size_t i = 0; i < g.frames.size(); ++i) std::cout << fmt::format("    #{:<2} {}\n", i, g.frames[i]);
    if (!g.python.empty()) std::cout << "  Python, main thread:\n";
    for (size_t i = 0; i < g.python.size(); ++i) std::cout << fmt::format("    #{:<2} {}\n", i, g.python[i]);
  }
  for (const std::string& n : s.notes) std::cout << "note: " << n << '\n';
  std::cout << '\n';
  if (s.stuck.empty())
    std::cout << "Verdict: no rank holds the others still (the ranks moved between samples, or no collective held a "
                 "clear majority in every sample).\n";
  for (const StuckFinding& f : s.stuck) std::cout << "FINDING stuck: " << f.summary << '\n';
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
      "  slowburn stacks --samples 5 -i 1     # a slower job: 5 samples 1 s apart\n\n"
      "Exit status: 0 a snapshot was taken (whether or not a rank is named), 1 an error, 2 nothing to watch (no "
      "rank on this node).");
  add_pids(sub, args->pids, "Only these rank processes", "every rank on this node");
  sub->add_option("--samples", args->options.samples,
                  "Samples per rank (2 or more to tell a stuck job from a moving one)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  add_interval(sub, args->options.interval_s, "samples");
  add_json(sub, args->json, "stack (one per rank), finding (one per stuck rank), summary");
  return {sub, [args] { return run(*args); }};
}

}  // namespace slowburn::cli
