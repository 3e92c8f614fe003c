#include "rdma/ib_connections.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "stats/robust.h"

namespace slowburn {

std::string_view ib_direction_name(IbDirection direction) {
  switch (direction) {
    case IbDirection::send:
      return "send";
    case IbDirection::recv:
      return "recv";
    case IbDirection::flush:
      return "flush";
    case IbDirection::qp:
      return "qp";
  }
  return "?";
}

std::string ib_connection_label(const IbConnectionView& view) {
  // A QP by its number: what `rdma resource show qp` and the NIC's counters name.
  if (view.stats->direction == IbDirection::qp) return fmt::format("qp {:#x}", view.stats->comm);
  return std::string(ib_direction_name(view.stats->direction)) + " #" + std::to_string(view.index);
}

IbSlowConnection slow_connection_of(const IbConnectionView& v) {
  return {v.stats->tgid,     v.stats->direction,  v.index,        v.stats->comm, v.stats->requests,
          v.mean_latency_ns, v.median_latency_ns, v.z.value_or(0)};
}

std::vector<IbConnectionView> analyze_ib_connections(const std::vector<IbConnectionStats>& stats,
                                                     const std::function<std::optional<int>(uint32_t)>& rank_of,
                                                     const IbSlowness& slowness) {
  std::vector<IbConnectionView> views;
  for (const IbConnectionStats& s : stats) {
    if (s.requests == 0) continue;
    IbConnectionView v;
    v.stats = &s;
    v.rank = rank_of(s.tgid);
    v.mean_latency_ns = static_cast<double>(s.total_ns) / static_cast<double>(s.requests);
    v.in_flight_bytes_per_s = s.total_ns ? static_cast<double>(s.bytes) * 1e9 / static_cast<double>(s.total_ns) : 0;
    views.push_back(v);
  }
  auto key = [](const IbConnectionView& v) {
    return std::make_tuple(v.rank.value_or(1 << 30), v.stats->tgid, static_cast<int>(v.stats->direction),
                           v.stats->comm);
  };
  std::sort(views.begin(), views.end(), [&](const auto& a, const auto& b) { return key(a) < key(b); });
  std::map<std::pair<uint32_t, IbDirection>, int> next_index;
  for (IbConnectionView& v : views) v.index = next_index[{v.stats->tgid, v.stats->direction}]++;

  // Per direction: a connection far slower than the job's others is a slow
  // path to that peer (a degraded link, a congested rail, a retrying QP).
  for (IbDirection dir : {IbDirection::send, IbDirection::recv, IbDirection::flush, IbDirection::qp}) {
    std::vector<IbConnectionView*> group;
    std::vector<double> means;
    for (IbConnectionView& v : views)
      if (v.stats->direction == dir && v.stats->requests >= slowness.min_requests) {
        group.push_back(&v);
        means.push_back(v.mean_latency_ns);
      }
    auto z = robust_z_scores(means);
    auto mid = median(means);
    if (!z || !mid) continue;
    for (size_t i = 0; i < group.size(); ++i) {
      group[i]->z = (*z)[i];
      group[i]->median_latency_ns = *mid;
      group[i]->slow = (*z)[i] >= slowness.z && means[i] >= slowness.ratio * *mid;
    }
  }
  return views;
}

}  // namespace slowburn
