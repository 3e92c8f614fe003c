#include "engine/finding_explainer.h"

#include <algorithm>

#include "sysfs/topology.h"

namespace slowburn {

ConcernsCulprit concerns_through(const Topology* topology) {
  return [topology](const DeviceEvent& e, const RankIdentity& culprit) {
    if (topology && !e.device.empty() && topology->find(e.device)) return topology->serves(e.device, culprit.pid);
    return event_names_rank(e, culprit);
  };
}

namespace {

// "rank 3 (pid 4242)" -> "rank 3 (pid 4242 on node-b)" in a line about it.
void name_node(const RankIdentity& id, std::string& text) {
  if (id.host.empty()) return;
  std::string label = rank_label(id);
  if (auto at = text.find(label); at != std::string::npos) text.replace(at, label.size(), rank_node_label(id));
}

}  // namespace

void FindingExplainer::add(DeviceEvent event, std::string host) {
  events_.push_back({std::move(event), std::move(host)});
  if (o_.max_events && events_.size() > o_.max_events)
    events_.erase(events_.begin(), events_.end() - static_cast<ptrdiff_t>(o_.max_events));
}

void FindingExplainer::forget_before(uint64_t now_ns) {
  if (!o_.keep_ns) return;
  auto recent = std::find_if(events_.begin(), events_.end(),
                             [&](const Kept& k) { return now_ns - std::min(now_ns, k.event.ts_ns) <= o_.keep_ns; });
  events_.erase(events_.begin(), recent);
}

void FindingExplainer::explain(Finding& finding, uint64_t now_ns) {
  forget_before(now_ns);
  if (o_.by_node) name_node(finding.culprit, finding.summary);
  std::vector<DeviceEvent> mine;
  for (const Kept& k : events_)
    if (!o_.by_node || k.host == finding.culprit.host) mine.push_back(k.event);
  attach_likely_causes(finding, mine, concerns_through(topology_));
  attach_sdc_activity(finding, sdc_activity_);
}

void FindingExplainer::explain(Episode& episode, uint64_t now_ns) {
  explain(episode.finding, now_ns);
  if (o_.by_node) name_node(episode.finding.culprit, episode.summary);
}

void FindingExplainer::explain(SessionVerdict& verdict, uint64_t now_ns) {
  for (Finding& f : verdict.stragglers) explain(f, now_ns);
  for (Finding& f : verdict.hangs) explain(f, now_ns);
  for (Episode& e : verdict.episodes) explain(e, now_ns);
}

std::vector<DeviceEvent> FindingExplainer::events() const {
  std::vector<DeviceEvent> out;
  out.reserve(events_.size());
  for (const Kept& k : events_) out.push_back(k.event);
  return out;
}

}  // namespace slowburn
