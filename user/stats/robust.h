// Robust statistics over small samples (one value per rank): median, MAD,
// the robust z-score, and exact quantiles. Pure functions, no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace slowburn {

inline constexpr double kMadToSigma = 1.4826;       // MAD of a normal sample = 0.6745 sigma
inline constexpr double kMeanAdToSigma = 1.253314;  // mean AD of a normal sample = 0.7979 sigma

// Median of the values; nullopt when empty. Even count: mean of the middle two.
std::optional<double> median(std::span<const double> values);

// Of integer times (ns), the middle value, exact: the upper of the middle
// two for an even count. `values` must not be empty.
int64_t upper_median(std::vector<int64_t> values);

// Median absolute deviation from the median (unscaled).
std::optional<double> median_abs_deviation(std::span<const double> values);

// Mean absolute deviation from the median: the fallback scale when MAD is 0.
std::optional<double> mean_abs_deviation(std::span<const double> values);

// Robust z of every value against the sample:
//   z = (x - median) / (1.4826 * MAD)
// When MAD is 0 (more than half of the values are identical), the scale falls
// back to 1.2533 * mean absolute deviation (Iglewicz & Hoaglin); when that is
// 0 too, every value equals the median and every z is 0.
// Fewer than 3 values give no z at all (nullopt): with 2 ranks every z is
// +-0.67 whatever the data, which would only mislead.
std::optional<std::vector<double>> robust_z_scores(std::span<const double> values);

// Robust z of x against a reference sample it is not part of (a rank
// against its peers): (x - median) / (1.4826 * MAD), with the same mean-AD
// fallback. When the sample has no spread at all, x equal to its median is 0
// and anything else is +-kRobustZCap. nullopt for an empty sample.
constexpr double kRobustZCap = 1000.0;
std::optional<double> robust_z_against(double x, std::span<const double> sample);

// Nearest-rank quantile (q in [0,1]) of unsorted values; nullopt when empty.
std::optional<double> quantile(std::span<const double> values, double q);

}  // namespace slowburn
