// One rank at one moment, for the stuck-job snapshot: what /proc says of
// it (state, CPU time, the system call and kernel function it waits in,
// stacks/../procfs/process_state.h), its user-space stack (stacks/unwind.h),
// and the collective it is inside: the outermost frame that is a catalog
// probe's function (MPI_Allreduce, gloo::allreduce, ncclAllReduce).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/rank_identity.h"
#include "procfs/process_state.h"
#include "stacks/python_stack.h"
#include "stacks/stack_comm.h"
#include "stacks/unwind.h"

namespace slowburn {

struct RankSample {
  ProcessSample process;
  uint64_t at_ns = 0;  // CLOCK_MONOTONIC
  std::string probe;   // "mpi.allreduce"; "" outside any collective
  std::string symbol;  // the collective's frame: "MPI_Allreduce"
  int32_t tid = 0;     // the thread shown: the one inside the collective, else the main thread
  std::vector<StackFrame> frames;
  std::string unwind_error;  // why its stack is missing or short
  uint64_t held_ns = 0;      // ptrace hold
  // What the collective may have been called on (stacks/stack_comm.h), and
  // the communicator the reader found among them: its label for people,
  // its key across ranks and its members, empty when not known.
  std::vector<CommCandidate> comm_candidates;
  std::string communicator;
  std::string comm_key;
  std::vector<int> comm_members;  // its members' MPI_COMM_WORLD ranks
  // A Python rank's main thread's Python frames (read for the last sample).
  PythonStack python;
};

// How much of each thread's stack a sample copies: the collective's frames
// and the library's below them fit with room to spare.
constexpr size_t kStackCaptureBytes = 32 * 1024;

// The probe of a PyTorch gloo worker's work frame
// (ProcessGroupGloo::AsyncWork::execute): inside a gloo collective, but the
// frame does not say which one (all-reduce, broadcast, barrier ...).
inline constexpr std::string_view kGlooWorkProbe = "gloo";

// Pure: which collective probe a frame's symbol is, "" when none.
std::string collective_probe_of(const std::string& symbol);

// Pure: of a process's threads, the one inside a collective (the outermost
// collective frame), else the main thread; its probe, symbol and the
// candidates for its communicator.
void choose_thread(const ProcessStacks& stacks, RankSample& sample);

// The live process now: /proc and its stacks.
Result<RankSample> sample_rank(const RankIdentity& rank, const std::string& proc_root);

}  // namespace slowburn
