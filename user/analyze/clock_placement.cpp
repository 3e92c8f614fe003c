#include "analyze/clock_placement.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cstdlib>

#include "core/format.h"
#include "stats/robust.h"

namespace slowburn {

namespace {

struct Exit {
  int64_t exit_ns;
  int64_t entry_ns;  // the same call's, on the same wall clock
  uint64_t seq;
  bool prompt;  // waited under kPromptRunqNs for a CPU inside the call
};

// One rank's exits on one lane, by exit time.
struct RankExits {
  std::vector<Exit> exits;
  bool numbered = true;    // every call's number counts from the communicator's creation
  bool runq_known = true;  // every call's run-queue wait was kept
};

using LaneExits = std::map<std::string, std::map<int32_t, RankExits>>;

// The node's synchronizing calls whose exits fall in [from, to] of its wall clock, per lane and rank.
Result<LaneExits> lane_exits(const NodeRecording& node, int64_t from_ns, int64_t to_ns) {
  LaneExits lanes;
  auto cursor = CallCursor::open(node.info.path);
  if (!cursor) return cursor.error();
  RecordedCall c;
  for (;;) {
    auto more = cursor->next(c);
    if (!more) return more.error();
    if (!*more) break;
    if (!node.pids.contains(c.pid)) continue;
    const ProbeSpec* spec = recorded_probe(node.info, c.probe_id);
    if (!spec || spec->kind != CallKind::synchronizing) continue;
    int64_t wall_ns = static_cast<int64_t>(c.exit_ns) + node.to_wall_ns;
    if (wall_ns < from_ns || wall_ns > to_ns) continue;
    RankExits& r = lanes[recorded_comm_key(node.info, c.comm_id) + " " + spec->name][c.pid];
    r.exits.push_back(
        {wall_ns, static_cast<int64_t>(c.entry_ns) + node.to_wall_ns, c.seq, c.runq_ns && *c.runq_ns < kPromptRunqNs});
    r.numbered = r.numbered && c.seq_absolute;
    r.runq_known = r.runq_known && c.runq_ns.has_value();
  }
  return lanes;
}

// One lane's releases: the pilot (the rank with most calls) gives the
// instances; each release is the earliest exit of any rank within half a
// step of the pilot's, prompt when any of those exits is (a late exit is
// never earlier than the release, a prompt one is at it).
ReleaseSeries lane_releases(std::map<int32_t, RankExits>& ranks) {
  bool numbered = true, runq_known = true;
  RankExits* pilot = nullptr;
  for (auto& [pid, r] : ranks) {
    std::sort(r.exits.begin(), r.exits.end(), [](const Exit& a, const Exit& b) { return a.exit_ns < b.exit_ns; });
    numbered = numbered && r.numbered;
    runq_known = runq_known && r.runq_known;
    if (!pilot || r.exits.size() > pilot->exits.size()) pilot = &r;
  }
  std::vector<double> steps;
  for (size_t i = 1; i < pilot->exits.size(); ++i)
    steps.push_back(static_cast<double>(pilot->exits[i].exit_ns - pilot->exits[i - 1].exit_ns));
  auto half_step = static_cast<int64_t>(median(steps).value_or(0) / 2);
  ReleaseSeries series;
  for (const Exit& e : pilot->exits) {
    int64_t release = e.exit_ns, last_entry = e.entry_ns;
    bool prompt = e.prompt;
    for (const auto& [pid, r] : ranks) {
      // Its exit nearest the pilot's (the pilot's own for the pilot): the
      // first within half a step could be the instance before's, whose
      // exit falls before this one's entries.
      auto it = std::lower_bound(r.exits.begin(), r.exits.end(), e.exit_ns,
                                 [](const Exit& x, int64_t t) { return x.exit_ns < t; });
      if (it != r.exits.begin() && (it == r.exits.end() || e.exit_ns - (it - 1)->exit_ns < it->exit_ns - e.exit_ns))
        --it;
      if (it != r.exits.end() && std::llabs(it->exit_ns - e.exit_ns) <= half_step) {
        release = std::min(release, it->exit_ns);
        last_entry = std::max(last_entry, it->entry_ns);
        prompt = prompt || it->prompt;
      }
    }
    series.release_ns.push_back(release);
    if (numbered) series.seq.push_back(e.seq);
    if (runq_known) series.prompt.push_back(prompt ? 1 : 0);
    series.last_entry_ns.push_back(last_entry);
  }
  return series;
}

// Where two series of one lane overlap: by sequence number where both are
// numbered (no clock needed), else on the nodes' own clocks (wrong by the
// offset, seconds at worst, against a stretch minutes long at usual step
// rates). The centre of the overlap, on the node's clock.
int64_t overlap_center(const ReleaseSeries& node, const ReleaseSeries& ref) {
  if (!node.seq.empty() && !ref.seq.empty()) {
    uint64_t lo = std::max(node.seq.front(), ref.seq.front()), hi = std::min(node.seq.back(), ref.seq.back());
    uint64_t mid = lo <= hi ? lo + (hi - lo) / 2 : node.seq[node.seq.size() / 2];
    auto at = std::lower_bound(node.seq.begin(), node.seq.end(), mid);
    if (at == node.seq.end()) --at;
    return node.release_ns[static_cast<size_t>(at - node.seq.begin())];
  }
  int64_t lo = std::max(node.release_ns.front(), ref.release_ns.front());
  int64_t hi = std::min(node.release_ns.back(), ref.release_ns.back());
  return lo <= hi ? lo + (hi - lo) / 2 : node.release_ns[node.release_ns.size() / 2];
}

// The stretch of wall-clock time read: the reference's middle, how far
// either side of it the reference is read, and how far the nodes are.
struct Stretch {
  int64_t middle_ns = 0, half_ns = 0, reach_ns = 0;
};

Stretch stretch_of(const NodeRecording& reference, const OffsetSearch& search) {
  const auto& span = reference.info.exit_span_ns;
  // The reference recorded no call: nothing to centre on, nothing to bound.
  if (!span) return {0, INT64_MAX / 2, INT64_MAX / 2};
  return {static_cast<int64_t>(span->first / 2 + span->second / 2) + reference.to_wall_ns, search.match_half_span_ns,
          search.match_half_span_ns + search.max_skew_ns};
}

Result<NodePlacement> place_node(const NodeRecording& node, const LaneReleases& reference, const Stretch& stretch,
                                 const OffsetSearch& search) {
  NodePlacement placement;
  const auto& span = node.info.exit_span_ns;
  if (span && (static_cast<int64_t>(span->second) + node.to_wall_ns < stretch.middle_ns - stretch.reach_ns ||
               static_cast<int64_t>(span->first) + node.to_wall_ns > stretch.middle_ns + stretch.reach_ns)) {
    placement.unknown_reason = fmt::format(
        "its recording ends or starts more than {} from the middle of the reference's on its own clock: the "
        "recordings do not overlap, or its clock is further off than analyze searches",
        format_ns(static_cast<double>(stretch.reach_ns)));
    return placement;
  }
  auto mine = node_releases(node, stretch.middle_ns - stretch.reach_ns, stretch.middle_ns + stretch.reach_ns);
  if (!mine) return mine.error();
  for (auto& [lane, series] : *mine) {
    auto ref = reference.find(lane);
    if (ref == reference.end() || series.release_ns.empty() || ref->second.release_ns.empty()) continue;
    series = section_near(series, overlap_center(series, ref->second), search.node_releases);
  }
  auto offset = estimate_clock_offset(reference, *mine, search);
  if (offset)
    placement.offset = *offset;
  else
    placement.unknown_reason = offset.error().message;
  return placement;
}

}  // namespace

ReleaseSeries section_near(const ReleaseSeries& series, int64_t center_ns, size_t max) {
  size_t n = series.release_ns.size();
  if (n <= max) return series;
  auto at = static_cast<size_t>(std::lower_bound(series.release_ns.begin(), series.release_ns.end(), center_ns) -
                                series.release_ns.begin());
  if (at > 0 && (at == n || center_ns - series.release_ns[at - 1] <= series.release_ns[at] - center_ns)) --at;
  size_t first = std::min(n - max, at > max / 2 ? at - max / 2 : 0);
  ReleaseSeries out;
  out.release_ns.assign(series.release_ns.begin() + static_cast<std::ptrdiff_t>(first),
                        series.release_ns.begin() + static_cast<std::ptrdiff_t>(first + max));
  if (!series.seq.empty())
    out.seq.assign(series.seq.begin() + static_cast<std::ptrdiff_t>(first),
                   series.seq.begin() + static_cast<std::ptrdiff_t>(first + max));
  if (!series.prompt.empty())
    out.prompt.assign(series.prompt.begin() + static_cast<std::ptrdiff_t>(first),
                      series.prompt.begin() + static_cast<std::ptrdiff_t>(first + max));
  if (!series.last_entry_ns.empty())
    out.last_entry_ns.assign(series.last_entry_ns.begin() + static_cast<std::ptrdiff_t>(first),
                             series.last_entry_ns.begin() + static_cast<std::ptrdiff_t>(first + max));
  return out;
}

Result<LaneReleases> node_releases(const NodeRecording& node, int64_t keep_from_ns, int64_t keep_to_ns) {
  auto lanes = lane_exits(node, keep_from_ns, keep_to_ns);
  if (!lanes) return lanes.error();
  LaneReleases out;
  for (auto& [lane, ranks] : *lanes) out[lane] = lane_releases(ranks);
  return out;
}

Result<std::vector<NodePlacement>> place_nodes(const std::vector<NodeRecording>& nodes, const OffsetSearch& search) {
  std::vector<NodePlacement> placements;
  if (nodes.empty()) return placements;
  Stretch stretch = stretch_of(nodes[0], search);
  auto reference = node_releases(nodes[0], stretch.middle_ns - stretch.half_ns, stretch.middle_ns + stretch.half_ns);
  if (!reference) return reference.error();
  placements.push_back({ClockOffset{}, {}});
  for (size_t i = 1; i < nodes.size(); ++i) {
    auto placed = place_node(nodes[i], *reference, stretch, search);
    if (!placed) return placed.error();
    placements.push_back(std::move(*placed));
  }
  return placements;
}

}  // namespace slowburn
