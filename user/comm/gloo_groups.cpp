#include "comm/gloo_groups.h"

#include <algorithm>
#include <functional>

namespace slowburn {

namespace {
constexpr size_t kRecentTags = 256;
constexpr size_t kMaxClassStreams = 64;  // beyond this the search is not worth it: groups stay unknown

// Backtracking over partitions of `streams` into at most `max_groups`
// groups whose members are pairwise compatible; counts them up to 2 and
// keeps the first.
struct Search {
  const std::vector<size_t>& streams;
  const std::function<bool(size_t, size_t)>& fits;
  size_t max_groups;
  size_t group_size;
  std::vector<std::vector<size_t>> current;
  std::vector<std::vector<size_t>> first;
  int solutions = 0;

  void run(size_t i) {
    if (solutions >= 2) return;
    if (i == streams.size()) {
      if (++solutions == 1) first = current;
      return;
    }
    size_t s = streams[i];
    // By index: the recursion grows `current`, which may move its groups.
    for (size_t g = 0; g < current.size(); ++g) {
      if (current[g].size() >= group_size) continue;
      if (!std::all_of(current[g].begin(), current[g].end(), [&](size_t m) { return fits(s, m); })) continue;
      current[g].push_back(s);
      run(i + 1);
      current[g].pop_back();
      if (solutions >= 2) return;
    }
    if (current.size() < max_groups) {
      current.push_back({s});
      run(i + 1);
      current.pop_back();
    }
  }
};
}  // namespace

size_t GlooGroups::add_stream(const Stream& stream) {
  streams_.push_back({stream, true, {}});
  size_t index = streams_.size() - 1;
  // Same process or same rank: never one group.
  for (size_t i = 0; i < index; ++i) {
    const Stream& other = streams_[i].info;
    if (!streams_[i].alive || other.size != stream.size) continue;
    if (other.pid == stream.pid || other.rank == stream.rank) incompatible_.insert({i, index});
  }
  regroup(stream.size);
  return index;
}

void GlooGroups::remove_pid(int32_t pid) {
  std::set<int> sizes;
  for (StreamState& s : streams_)
    if (s.alive && s.info.pid == pid) {
      s.alive = false;
      s.calls.clear();
      sizes.insert(s.info.size);
    }
  for (int size : sizes) regroup(size);
}

bool GlooGroups::compatible(size_t a, size_t b) const {
  if (a == b) return true;
  return !incompatible_.contains({std::min(a, b), std::max(a, b)});
}

bool GlooGroups::observe(size_t index, uint64_t tag, uint64_t entry_ns, uint64_t exit_ns) {
  StreamState& self = streams_.at(index);
  bool changed = false;
  for (size_t i = 0; i < streams_.size(); ++i) {
    const StreamState& other = streams_[i];
    if (i == index || !other.alive || other.info.size != self.info.size || !compatible(i, index)) continue;
    auto it = other.calls.find(tag);
    if (it == other.calls.end()) continue;
    // One instance: every entry precedes every exit.
    if (std::max(entry_ns, it->second.first) > std::min(exit_ns, it->second.second)) {
      incompatible_.insert({std::min(i, index), std::max(i, index)});
      changed = true;
    }
  }
  self.calls[tag] = {entry_ns, exit_ns};
  while (self.calls.size() > kRecentTags) self.calls.erase(self.calls.begin());
  if (changed) regroup(self.info.size);
  return changed;
}

void GlooGroups::regroup(int size) {
  std::vector<size_t> members;
  for (size_t i = 0; i < streams_.size(); ++i)
    if (streams_[i].alive && streams_[i].info.size == size) members.push_back(i);
  auto& groups = groups_[size];
  ++generation_;
  groups.clear();
  if (members.empty() || members.size() > kMaxClassStreams || size <= 0) return;
  std::function<bool(size_t, size_t)> fits = [this](size_t a, size_t b) { return compatible(a, b); };
  // The fewest groups that can hold every stream; more are tried only when
  // that many cannot (members on other nodes leave local groups short).
  size_t fewest = (members.size() + static_cast<size_t>(size) - 1) / static_cast<size_t>(size);
  for (size_t count = fewest; count <= members.size(); ++count) {
    Search search{members, fits, count, static_cast<size_t>(size), {}, {}, 0};
    search.run(0);
    if (search.solutions == 0) continue;
    if (search.solutions == 1)
      for (size_t g = 0; g < search.first.size(); ++g)
        for (size_t s : search.first[g]) groups[s] = g;
    return;
  }
}

std::optional<std::vector<size_t>> GlooGroups::group_of(size_t index) const {
  const StreamState& self = streams_.at(index);
  auto cls = groups_.find(self.info.size);
  if (cls == groups_.end()) return std::nullopt;
  auto it = cls->second.find(index);
  if (it == cls->second.end()) return std::nullopt;
  std::vector<size_t> members;
  for (const auto& [stream, group] : cls->second)
    if (group == it->second) members.push_back(stream);
  return members;
}

}  // namespace slowburn
