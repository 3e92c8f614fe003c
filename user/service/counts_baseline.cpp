#include "service/counts_baseline.h"

namespace slowburn {

AggCounts CountsBaseline::since(const AggStats& stats) const {
  auto it = base_.find(key_of(stats));
  return stats.since(it == base_.end() ? AggCounts{} : it->second);
}

std::vector<AggCounts> CountsBaseline::advance(const std::vector<AggStats>& reading) {
  std::vector<AggCounts> deltas;
  deltas.reserve(reading.size());
  for (const AggStats& s : reading) deltas.push_back(since(s));
  base_.clear();
  for (const AggStats& s : reading) base_[key_of(s)] = s;
  return deltas;
}

void CountsBaseline::forget(int32_t pid) {
  std::erase_if(base_, [pid](const auto& kv) { return std::get<0>(kv.first) == static_cast<uint32_t>(pid); });
}

}  // namespace slowburn
