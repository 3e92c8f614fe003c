// analyze's first pass: every node's clock offset to the reference's (the
// first recording's), from when its collectives released their ranks
// (analyze/clock_offsets.h), or the reason it has none. Each node is read
// on a bounded stretch around the middle of the reference's recording, so
// memory does not grow with the recordings' length.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analyze/clock_offsets.h"
#include "analyze/recording_set.h"
#include "core/error.h"

namespace slowburn {

struct NodePlacement {
  std::optional<ClockOffset> offset;  // its CLOCK_REALTIME -> the reference's; the reference's is 0
  std::string unknown_reason;         // no offset: why (the node is then left out)
};

// One placement per node, in order.
Result<std::vector<NodePlacement>> place_nodes(const std::vector<NodeRecording>& nodes, const OffsetSearch& search);

// When each of the node's collectives released its ranks, per (communicator,
// probe): one rank (the one with most calls) gives the instances; each
// release is the earliest of the node's ranks' exits near it. Only exits
// within [keep_from_ns, keep_to_ns] of the node's wall clock.
Result<LaneReleases> node_releases(const NodeRecording& node, int64_t keep_from_ns, int64_t keep_to_ns);

// At most `max` consecutive releases of the series, centred on the one
// nearest `center_ns` (where the node's recording overlaps the reference's).
ReleaseSeries section_near(const ReleaseSeries& series, int64_t center_ns, size_t max);

}  // namespace slowburn
