// What `slowburn investigate` and the MCP investigate tool walk the layers
// with: a live trace session with every source on, or recordings through
// analyze. The finding and verdict lines go to `lines` as they come (null:
// nowhere); node-wide source states and device events are kept.
#pragma once

#include <atomic>

#include "analyze/analyze.h"
#include "core/error.h"
#include "investigate/investigation.h"
#include "sinks/sink.h"
#include "trace/trace_session.h"

namespace slowburn {

Result<InvestigationInput> gather_live(const TraceOptions& options, Sink* lines, const std::atomic<bool>& stop);
Result<InvestigationInput> gather_recorded(const AnalyzeOptions& options, Sink* lines);

}  // namespace slowburn
