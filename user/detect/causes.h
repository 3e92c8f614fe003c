// Joins a finding to the hardware and fabric events that concern its
// culprit: an Xid on its GPU, a downtrained link above its NIC, pause storms
// or retransmissions on its NIC, its QPs moved to ERR. Pure.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "detect/inside.h"
#include "detect/own_cpu_causes.h"
#include "detect/report.h"
#include "events/device_event.h"

namespace slowburn {

// Whether an event concerns the culprit. By default: the event's ranks
// (resolved when it happened) include the culprit's rank, right for one job
// traced from its start. A service that outlives jobs asks its current
// topology instead (an event seen before the job started has no ranks).
using ConcernsCulprit = std::function<bool(const DeviceEvent&, const RankIdentity&)>;
bool event_names_rank(const DeviceEvent& event, const RankIdentity& culprit);

// Sets finding.likely_causes from the events that concern the culprit (at
// most three, most severe first, one per type and device) and appends the
// first to the summary. Recovered links are not causes. Returns whether any
// cause was found.
bool attach_likely_causes(Finding& finding, std::span<const DeviceEvent> events,
                          const ConcernsCulprit& concerns = event_names_rank);

// Sets finding.sdc_activity (the node's ECC/EDAC/MCE activity, as
// health/health_check.h's sdc_activity words it) and says it in the summary
// after the causes; nothing when `activity` is unset.
void attach_sdc_activity(Finding& finding, const std::optional<std::string>& activity);

// How strong a cause of slowness the event is: 0 the strongest; -1 not a
// cause (a recovered link, an informational Xid). Recordings keep it.
int cause_rank(const DeviceEvent& event);

// Whether the event is a cause that loses or slows a rank's own data (its
// TCP sockets retransmitting, its NIC's retransmissions or errors, its
// link down, flapping or trained down, AER errors): the collective's data
// after the last arrival waits for it. Not gaps its NIC saw in what it
// received (rdma.retrans "rx"): those are a peer's packets lost.
bool data_path_cause(const DeviceEvent& event);

// The event's summary as said of the rank: "rank 1 (pid 7)'s TCP sockets
// ..." becomes "its TCP sockets ..."; another event's summary as it is.
std::string event_about_rank(const DeviceEvent& event, const RankIdentity& rank);

// What a data-path cause says of each rank it concerns, for the inside
// rule (detect/inside.h): trace's and probe's detectors alike. Nothing for
// any other event.
std::vector<std::pair<int32_t, TransportEvidence>> transport_evidence_of(const DeviceEvent& event, uint64_t ts_ns,
                                                                         const std::vector<RankIdentity>& ranks,
                                                                         const ConcernsCulprit& concerns);

// A rank its own cgroup throttled, as the node said it (host.cpu_throttled,
// set apart from peers of its job on the node: a rank with no peer there
// to compare is not), and the time the saying covers on the clock of
// ts_ns: the interval judged (fields.span_ns, 5 s without it, ending
// fields.span_ended_before_ns before it). A throttled rank is off its CPU
// by a cause of its own, which the run queue does not show: the
// scheduler's-choice rule must not withhold it (detect/own_cpu_causes.h).
std::vector<OwnCpuCause> own_cpu_cause_of(const DeviceEvent& event, uint64_t ts_ns,
                                          const std::vector<RankIdentity>& ranks, const ConcernsCulprit& concerns);

// "fatal" (AER), "error", "warning" or "info": how bad an event is as a cause of slowness
// (the metrics' severity label; info for types that are not causes).
std::string_view event_severity(const DeviceEvent& event);

}  // namespace slowburn
