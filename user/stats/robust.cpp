#include "stats/robust.h"

#include <algorithm>
#include <cmath>

namespace slowburn {

std::optional<double> median(std::span<const double> values) {
  if (values.empty()) return std::nullopt;
  std::vector<double> sorted(values.begin(), values.end());
  size_t mid = sorted.size() / 2;
  std::nth_element(sorted.begin(), sorted.begin() + mid, sorted.end());
  double upper = sorted[mid];
  if (sorted.size() % 2 == 1) return upper;
  double lower = *std::max_element(sorted.begin(), sorted.begin() + mid);
  return (lower + upper) / 2.0;
}

int64_t upper_median(std::vector<int64_t> values) {
  auto mid = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), mid, values.end());
  return *mid;
}

std::optional<double> median_abs_deviation(std::span<const double> values) {
  auto center = median(values);
  if (!center) return std::nullopt;
  std::vector<double> deviations;
  deviations.reserve(values.size());
  for (double v : values) deviations.push_back(std::fabs(v - *center));
  return median(deviations);
}

std::optional<double> mean_abs_deviation(std::span<const double> values) {
  auto center = median(values);
  if (!center) return std::nullopt;
  double sum = 0;
  for (double v : values) sum += std::fabs(v - *center);
  return sum / static_cast<double>(values.size());
}

// sigma estimate of a non-empty sample: 1.4826 MAD, or 1.2533 mean AD when MAD is 0.
double robust_scale(std::span<const double> values) {
  double scale = kMadToSigma * *median_abs_deviation(values);
  return scale != 0 ? scale : kMeanAdToSigma * *mean_abs_deviation(values);
}

std::optional<std::vector<double>> robust_z_scores(std::span<const double> values) {
  if (values.size() < 3) return std::nullopt;
  double center = *median(values);
  double scale = robust_scale(values);
  std::vector<double> z(values.size(), 0.0);
  if (scale == 0) return z;
  for (size_t i = 0; i < values.size(); ++i) z[i] = (values[i] - center) / scale;
  return z;
}

std::optional<double> robust_z_against(double x, std::span<const double> sample) {
  auto center = median(sample);
  if (!center) return std::nullopt;
  double scale = robust_scale(sample);
  if (scale == 0) return x == *center ? 0.0 : std::copysign(kRobustZCap, x - *center);
  return std::clamp((x - *center) / scale, -kRobustZCap, kRobustZCap);
}

std::optional<double> quantile(std::span<const double> values, double q) {
  if (values.empty()) return std::nullopt;
  std::vector<double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());
  q = std::clamp(q, 0.0, 1.0);
  size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[rank == 0 ? 0 : rank - 1];
}

}  // namespace slowburn
