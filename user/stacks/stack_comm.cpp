#include "stacks/stack_comm.h"

#include <algorithm>
#include <map>
#include <set>

namespace slowburn {

namespace {

// An MPICH handle is an int (0x44000000 and up), an Open MPI handle a
// pointer: smaller values are counts, ranks and flags.
constexpr uint64_t kSmallest = 0x10000;
constexpr uint64_t kStackSpan = uint64_t{16} << 20;  // pointers this near the stack point into it

}  // namespace

std::vector<CommCandidate> comm_candidates(const ThreadStack& thread, size_t collective, size_t max_candidates) {
  std::vector<CommCandidate> out;
  if (collective >= thread.frames.size() || thread.stack_words.empty()) return out;
  // The collective frame's canonical frame address: its caller's stack
  // pointer; without it, the collective's frame is taken to be short.
  uint64_t end = collective + 1 < thread.frames.size() ? thread.frames[collective + 1].sp : 0;
  if (!end) end = thread.frames[collective].sp ? thread.frames[collective].sp + 256 : 0;
  if (end <= thread.stack_at) return out;
  size_t words = std::min<size_t>(thread.stack_words.size(), (end - thread.stack_at) / 8);
  std::set<uint64_t> code;
  for (const StackFrame& f : thread.frames) code.insert(f.pc);
  auto keep = [&](uint64_t v) {
    if (v < kSmallest || code.contains(v)) return false;
    uint64_t low = thread.stack_at > kStackSpan ? thread.stack_at - kStackSpan : 0;
    return v < low || v > thread.stack_at + kStackSpan;
  };
  std::map<uint64_t, CommCandidate> seen;  // by value
  std::map<uint64_t, size_t> first;        // the value's first place, innermost first
  size_t place = 0;
  auto add = [&](uint64_t v) {
    ++place;
    if (!keep(v)) return;
    auto& c = seen[v];
    c.value = v;
    ++c.seen;
    first.try_emplace(v, place);
  };
  for (uint64_t r : thread.registers) add(r);
  for (size_t i = 0; i < words; ++i) add(thread.stack_words[i]);
  for (auto& [v, c] : seen) out.push_back(c);
  std::sort(out.begin(), out.end(), [&](const CommCandidate& a, const CommCandidate& b) {
    return a.seen != b.seen ? a.seen > b.seen : first[a.value] < first[b.value];
  });
  if (out.size() > max_candidates) out.resize(max_candidates);
  return out;
}

}  // namespace slowburn
