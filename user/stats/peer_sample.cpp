#include "stats/peer_sample.h"

#include <algorithm>
#include <cmath>

#include "stats/robust.h"

namespace slowburn {

namespace {
const std::vector<double> kNone;

size_t count_le(const std::vector<double>& sorted, double x) {
  return static_cast<size_t>(std::upper_bound(sorted.begin(), sorted.end(), x) - sorted.begin());
}

// How many of the sorted values lie within `d` of `center`, deviations
// computed as fabs(v - center) does: on either side of the centre the
// deviation is monotone in v, so each side is one binary search.
size_t count_within(const std::vector<double>& sorted, double center, double d) {
  auto split = std::lower_bound(sorted.begin(), sorted.end(), center);
  // Right side [split, end): v - center rises with v.
  auto right_end = std::partition_point(split, sorted.end(), [&](double v) { return std::fabs(v - center) <= d; });
  // Left side [begin, split): center - v falls as v rises.
  auto left_begin = std::partition_point(sorted.begin(), split, [&](double v) { return std::fabs(v - center) > d; });
  return static_cast<size_t>((right_end - split) + (split - left_begin));
}
}  // namespace

PeerSample::PeerSample(const std::map<int32_t, std::vector<double>>& per_member) {
  for (const auto& [id, values] : per_member) {
    pool_.insert(pool_.end(), values.begin(), values.end());
    std::vector<double>& sorted = members_[id].sorted;
    sorted = values;
    std::sort(sorted.begin(), sorted.end());
  }
  std::sort(pool_.begin(), pool_.end());
}

const std::vector<double>& PeerSample::own(int32_t self) const {
  auto it = members_.find(self);
  return it == members_.end() ? kNone : it->second.sorted;
}

double PeerSample::kth_without(size_t k, const std::vector<double>& own) const {
  // The smallest pool index whose value has k + 1 peers' values at or below it.
  size_t lo = 0, hi = pool_.size() - 1;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    double v = pool_[mid];
    if (count_le(pool_, v) - count_le(own, v) >= k + 1)
      hi = mid;
    else
      lo = mid + 1;
  }
  return pool_[lo];
}

double PeerSample::kth_deviation_without(size_t k, double center, const std::vector<double>& own) const {
  // The answer is the deviation of some pool value: search each side of the
  // centre for the smallest deviation with k + 1 peers' deviations within it.
  auto enough = [&](double d) { return count_within(pool_, center, d) - count_within(own, center, d) >= k + 1; };
  auto split = std::lower_bound(pool_.begin(), pool_.end(), center);
  double best = INFINITY;
  auto right = std::partition_point(split, pool_.end(), [&](double v) { return !enough(std::fabs(v - center)); });
  if (right != pool_.end()) best = std::fabs(*right - center);
  // Left of the centre deviations fall as v rises: search from the centre outwards.
  auto left = std::partition_point(std::make_reverse_iterator(split), pool_.rend(),
                                   [&](double v) { return !enough(std::fabs(v - center)); });
  if (left != pool_.rend()) best = std::min(best, std::fabs(*left - center));
  return best;
}

std::optional<double> PeerSample::median_without(const std::vector<double>& own) const {
  size_t m = pool_.size() - own.size();
  if (m == 0) return std::nullopt;
  double upper = kth_without(m / 2, own);
  if (m % 2 == 1) return upper;
  return (kth_without(m / 2 - 1, own) + upper) / 2.0;
}

std::optional<double> PeerSample::peer_median(int32_t self) const { return median_without(own(self)); }

std::optional<double> PeerSample::z_against_peers(double x, int32_t self) const {
  const std::vector<double>& mine = own(self);
  auto center = median_without(mine);
  if (!center) return std::nullopt;
  size_t m = pool_.size() - mine.size();
  double upper = kth_deviation_without(m / 2, *center, mine);
  double mad = m % 2 == 1 ? upper : (kth_deviation_without(m / 2 - 1, *center, mine) + upper) / 2.0;
  double scale = kMadToSigma * mad;
  if (scale == 0) {  // the mean-AD fallback, as robust_scale: rare (most peers identical)
    double sum = 0;
    for (double v : pool_) sum += std::fabs(v - *center);
    for (double v : mine) sum -= std::fabs(v - *center);
    scale = kMeanAdToSigma * std::max(0.0, sum) / static_cast<double>(m);
  }
  if (scale == 0) return x == *center ? 0.0 : std::copysign(kRobustZCap, x - *center);
  return std::clamp((x - *center) / scale, -kRobustZCap, kRobustZCap);
}

}  // namespace slowburn
