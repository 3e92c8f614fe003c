// Which communicator a rank that is stuck inside a collective called it on,
// when slowburn was not there to see the call: the handle was an argument,
// and while the library works on the call it keeps the handle in the
// collective's frames (spilled, or in a callee-saved register that a deeper
// call pushed). The words of those frames, copied while the thread was held
// (stacks/unwind.h), are the candidates; the communicator reader (comm/)
// keeps the ones that read as a communicator holding this rank, and the
// one seen most often is the call's. Pure: a thread's copy in, candidates out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "stacks/unwind.h"

namespace slowburn {

struct CommCandidate {
  uint64_t value = 0;
  int seen = 0;  // times in the collective's frames and the registers
};

// The words from the innermost frame up to the collective frame's caller
// (frame `collective` is the collective's own), and the innermost
// registers; values that cannot be a handle (0, small numbers, code
// addresses of the stack's own frames, pointers into the stack) left out.
// Most seen first; at most `max_candidates`.
std::vector<CommCandidate> comm_candidates(const ThreadStack& thread, size_t collective, size_t max_candidates = 512);

}  // namespace slowburn
