// One `slowburn stacks` snapshot, as the CLI and the MCP server take it: a
// few samples of every rank, grouped, judged (stacks/stuck.h), and its JSON
// objects (the `stack`, `finding` and `summary` lines of `stacks --json`).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/rank_identity.h"
#include "stacks/stuck.h"

namespace slowburn {

// Live processes only: a captured /proc tree's pids would name other
// processes of this host, and stacks stop what they read.
struct StacksOptions {
  int samples = 3;
  double interval_s = 0.5;
};

struct StacksSnapshot {
  std::vector<RankSamples> ranks;  // by rank; a rank that exits mid-snapshot is left out, with a note
  std::vector<StackGroup> groups;
  std::vector<StuckFinding> stuck;
  std::vector<std::string> notes;
  double held_ms_per_read = 0;  // ptrace hold per process and sample
  int samples = 0;
  double interval_s = 0;
};

StacksSnapshot take_stacks(const std::vector<RankIdentity>& ranks, const StacksOptions& options);

// One `stack` object per rank, a `finding` per stuck rank, the `summary`.
std::vector<nlohmann::json> stack_lines(const StacksSnapshot& snapshot);
nlohmann::json finding_json(const StuckFinding& finding);
nlohmann::json summary_json(const StacksSnapshot& snapshot);

}  // namespace slowburn
