// A job already stuck when slowburn arrives: from a few samples of every
// rank (stacks/snapshot.h), the groups of ranks that sit in the same place,
// and the odd one named. The rule: when nearly every rank waits inside one
// collective in every sample (nobody moved), the rest are the job's
// culprits, each with what holds it: stopped (state T), blocked in the
// kernel (D, or a system call outside any collective), inside another
// collective (a mismatch), or running its own code outside any collective.
// A job whose ranks move between samples is not stuck: groups, nobody
// named. Pure: samples in, groups and findings out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "stacks/snapshot.h"

namespace slowburn {

struct RankSamples {
  int rank = -1;
  int32_t pid = 0;
  std::vector<RankSample> samples;  // oldest first
  // On-CPU share over the samples' span (its threads' CPU time / wall time).
  double cpu_share() const;
  uint64_t span_ns() const;
};

struct StackGroup {
  std::vector<int> ranks;
  std::string where;  // "inside MPI_Allreduce (mpi.allreduce) on MPI_COMM_WORLD", "outside any collective"
  std::string state;  // "running", "sleeping", "stopped", "disk sleep"
  std::vector<std::string> frames;  // the first member's frames, "symbol (module)", innermost first
  std::vector<std::string> python;  // its Python frames, "function (file:line)", innermost first
};

struct StuckFinding {
  int rank = -1;
  int32_t pid = 0;
  std::string kind;  // "stopped", "blocked", "mismatch", "running"
  std::string summary;
  std::vector<int> waiting_ranks;
  std::string waiting_in;  // the collective's symbol the others wait in
  std::string waiting_on;  // its communicator, "" when not read
};

// The last sample's groups: same state class, same collective on the same
// communicator, same frames from the collective frame out (or the whole
// stack outside one).
std::vector<StackGroup> group_ranks(const std::vector<RankSamples>& ranks);

// The odd ranks when the rest wait, every sample, inside one collective;
// none otherwise (a moving job, too few samples, or no clear majority).
// When every waiting rank's communicator is known, a mismatch is a rank
// alone in its collective on a communicator whose other members wait in
// another one (ranks of other communicators in other collectives are not).
std::vector<StuckFinding> find_stuck(const std::vector<RankSamples>& ranks);

// "running" R, "sleeping" S, "disk sleep" D, "stopped" T/t, "zombie" Z.
std::string state_word(char state);

}  // namespace slowburn
