#include "detect/wavefront.h"

#include <algorithm>

namespace slowburn {

std::string_view wavefront_role_name(WavefrontRole role) {
  switch (role) {
    case WavefrontRole::waiting:
      return "waiting";
    case WavefrontRole::blocked_behind:
      return "blocked_behind";
    case WavefrontRole::ahead:
      return "ahead";
    case WavefrontRole::behind:
      return "behind";
    case WavefrontRole::does_not_run:
      return "does_not_run";
    case WavefrontRole::exited:
      return "exited";
  }
  return "?";
}

std::vector<int32_t> WavefrontJudgement::with(WavefrontRole role) const {
  std::vector<int32_t> out;
  for (const auto& [pid, r] : roles)
    if (r == role) out.push_back(pid);
  return out;
}

namespace {

const MemberPosition::Inside* inside_at(const MemberPosition& m, uint64_t position) {
  for (const auto& in : m.inside)
    if (in.position == position) return &in;
  return nullptr;
}

bool inside_before(const MemberPosition& m, uint64_t position) {
  return std::any_of(m.inside.begin(), m.inside.end(), [&](const auto& in) { return in.position < position; });
}

WavefrontRole role_of(const MemberPosition& m, const ProcessView* kernel, uint64_t wavefront) {
  if (m.exited) return WavefrontRole::exited;
  if (kernel && kernel->does_not_run()) return WavefrontRole::does_not_run;
  if (inside_at(m, wavefront)) return WavefrontRole::waiting;
  if (inside_before(m, wavefront)) return WavefrontRole::blocked_behind;
  if (m.completed >= wavefront) return WavefrontRole::ahead;
  return WavefrontRole::behind;
}

// The collective most members at the wavefront are in, and those in another.
void find_mismatch(const std::vector<MemberPosition>& members, WavefrontJudgement& j) {
  std::map<std::string, size_t> count;
  for (const MemberPosition& m : members)
    if (const auto* at = inside_at(m, j.position)) ++count[at->probe];
  if (count.empty()) return;
  j.probe = std::max_element(count.begin(), count.end(), [](const auto& a, const auto& b) {
              return a.second < b.second;
            })->first;
  for (const MemberPosition& m : members)
    if (const auto* at = inside_at(m, j.position); at && at->probe != j.probe) j.mismatched[m.pid] = at->probe;
}

}  // namespace

WavefrontJudgement judge_wavefront(const std::vector<MemberPosition>& members,
                                   const std::map<int32_t, ProcessView>& kernel, uint64_t now_ns, uint64_t hang_ns) {
  WavefrontJudgement j;
  for (const MemberPosition& m : members)
    for (const auto& in : m.inside)
      if (in.since_ns <= now_ns) j.position = std::max(j.position, in.position);
  if (j.position == 0) return j;
  for (const MemberPosition& m : members)
    if (const auto* at = inside_at(m, j.position);
        at && at->since_ns <= now_ns && now_ns - at->since_ns > j.waited_ns) {
      j.waited_ns = now_ns - at->since_ns;
      j.since_ns = at->since_ns;
    }
  j.stuck = j.waited_ns >= hang_ns;
  for (const MemberPosition& m : members) {
    auto k = kernel.find(m.pid);
    WavefrontRole role = role_of(m, k == kernel.end() ? nullptr : &k->second, j.position);
    j.roles[m.pid] = role;
    if (role == WavefrontRole::behind || role == WavefrontRole::exited || role == WavefrontRole::does_not_run)
      j.culprits.push_back(m.pid);
  }
  find_mismatch(members, j);
  return j;
}

}  // namespace slowburn
