// Node clock offsets from the data, never from the nodes' clocks: a
// synchronizing collective releases all its ranks together, so the k-th
// release of a communicator's collective seen on node A and on node B
// happened at the same instant, and their difference is the offset between
// the two clocks (plus the collective's own spread, a few microseconds).
//
// Which release is the k-th on each node:
//   - by the communicator's sequence number when it counts from the
//     communicator's creation on every member (gloo's tag): no search;
//   - otherwise (tracers started at different steps) by searching the shift
//     between the two nodes' series that makes the differences agree, then
//     matching every release to the nearest one on the estimated clock.
// A job whose steps repeat too regularly for one shift to stand out is
// refused, said why: a wrong shift would put one node a whole step away.
//
// On a busy node a rank leaves a collective when it gets a CPU back,
// up to milliseconds after the release: the true shift's differences
// spread as wide as the neighbouring shifts' (one step off), and the search
// could not tell them apart. Where the recordings kept run-queue waits,
// the releases whose call never waited for a CPU are *prompt* (the exit is
// the release): shifts are judged, and the line fitted, on pairs prompt on
// both nodes first, on every pair where too few are.
// Pure: fed release times, no files.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"

namespace slowburn {

// One lane (communicator key + probe) as one node saw it: its instances'
// releases on that node's clock, oldest first.
struct ReleaseSeries {
  std::vector<int64_t> release_ns;
  // Parallel to release_ns when the sequence numbers count from the
  // communicator's creation (the same instance has the same number on every
  // node); empty otherwise.
  std::vector<uint64_t> seq;
  // Parallel to release_ns where the node's recording kept run-queue waits:
  // 1 where some rank's call of that instance waited under kPromptRunqNs
  // for a CPU (it left when released, and the release, the earliest exit,
  // is its exit); empty otherwise.
  std::vector<uint8_t> prompt;
  // Parallel to release_ns where every rank's entries were kept: the latest
  // entry of the node's ranks into that instance (analyze/clock_causality.h:
  // no rank anywhere leaves before it); empty otherwise.
  std::vector<int64_t> last_entry_ns;
};

// A call that waited less than this for a CPU left its collective when it
// was released, give or take its own exit path.
constexpr uint64_t kPromptRunqNs = 50'000;

using LaneReleases = std::map<std::string, ReleaseSeries>;

// The node's clock against the reference's as a line: an offset at an
// anchor and a drift. Two undisciplined clocks drift 10-50 ppm apart (20 ppm
// is 12 ms an hour), so one constant per node puts partners' calls
// milliseconds apart at the ends of a long recording; the drift is fitted
// robustly (Theil-Sen: the median of slopes between releases half the
// matched series apart) once the matched releases span kMinDriftSpanNs.
struct ClockOffset {
  int64_t offset_ns = 0;  // add to the node's timestamps (at anchor_ns) to get the reference's clock
  int64_t spread_ns = 0;  // median absolute deviation of the matched differences from the line
  size_t matched = 0;     // releases matched across the two nodes
  std::string lane;       // the lane that gave it
  double drift_ppm = 0;   // the offset grows this many ns per ms of the node's clock (+: the node's runs slow)
  int64_t anchor_ns = 0;  // the node's time at which offset_ns holds (the middle of the matched releases)
  int64_t span_ns = 0;    // the node's time from the first matched release to the last
  // Of `matched`, the pairs prompt on both nodes that the line was fitted
  // on (0: fitted on every pair: too few prompt, or no run-queue waits kept).
  size_t prompt_matched = 0;
  // Where causality placed it (analyze/clock_causality.h): how wide the
  // bounds it must lie in are (the median chunk's); 0 where it did not.
  int64_t causal_width_ns = 0;
  bool numbered = false;  // matched by sequence number: its instances known
  // How far the offset may be off: the causal bounds' width where they are
  // narrower than the spread, else the spread.
  int64_t uncertainty_ns() const {
    return causal_width_ns > 0 && causal_width_ns < spread_ns ? causal_width_ns : spread_ns;
  }
  // What to add to the node's time `node_ns` to get the reference's.
  int64_t at(int64_t node_ns) const {
    return offset_ns + static_cast<int64_t>(drift_ppm * 1e-6 * static_cast<double>(node_ns - anchor_ns));
  }
};

// Below this span of matched releases the drift is left at 0: the slope
// between two releases a few seconds apart is their spread, not the clocks'.
// A lane whose matches span this much is preferred to one whose do not
// (analyze keeps 4096 releases a lane: a lane stepping every 2 ms spans 8 s).
constexpr int64_t kMinDriftSpanNs = 10'000'000'000;

struct OffsetSearch {
  size_t min_matched = 20;    // fewer matched releases than this: no estimate
  size_t window = 48;         // consecutive releases of the node tried against every shift
  size_t windows = 5;         // such windows, spread over its series (one may hold a lost instance)
  size_t sample = 48;         // differences scored per shift
  double min_contrast = 2.0;  // the best shift's spread must beat the runner-up's this many times
  // A window of the node's releases for the prompt search holds this many
  // prompt ones (so that `sample` pairs are prompt on both nodes where half
  // the reference's are), and at most max_prompt_window releases.
  size_t prompt_in_window = 96;
  size_t max_prompt_window = 480;
  // Releases of a node (not the reference) kept per lane: a stretch this
  // long matches as well as the whole recording for a constant offset, and
  // keeps analyze's memory flat in the number of nodes (section_near, analyze/clock_placement.h).
  size_t node_releases = 4096;
  // analyze's first pass holds only this much of the reference's recording
  // either side of its middle, and of each node that stretch widened by the
  // largest clock skew it searches: bounded, whatever the recordings' length.
  int64_t match_half_span_ns = 600'000'000'000;  // 10 minutes
  int64_t max_skew_ns = 600'000'000'000;         // 10 minutes
};

// The node's offset to the reference, from the lanes both saw; an error
// that says why when none gives one (no shared communicator, too few
// instances, too regular to match).
Result<ClockOffset> estimate_clock_offset(const LaneReleases& reference, const LaneReleases& node,
                                          const OffsetSearch& search = {});

}  // namespace slowburn
