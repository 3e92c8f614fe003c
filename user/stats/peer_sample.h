// Every member's values against its peers' (every other member's), for many
// members at once. robust_z_against on a copy of the peers' values costs
// O(members x values) per member, so a window of a 512-rank job spent most of
// analyze's time copying and sorting (quadratic in the ranks). Here the pool
// is sorted once and a member's own values are taken out by counting: the
// same median, MAD and robust z as robust_z_against on its peers' values, in
// O(log^2) per member. Pure.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace slowburn {

class PeerSample {
 public:
  explicit PeerSample(const std::map<int32_t, std::vector<double>>& per_member);

  // Of every value but `self`'s (a member not in the pool: every value).
  std::optional<double> peer_median(int32_t self) const;
  // robust_z_against(x, the peers' values).
  std::optional<double> z_against_peers(double x, int32_t self) const;

 private:
  struct Values {
    std::vector<double> sorted;
  };
  const std::vector<double>& own(int32_t self) const;
  // The k-th smallest (from 0) of the pool without `own`.
  double kth_without(size_t k, const std::vector<double>& own) const;
  // The k-th smallest |v - center| over the pool without `own`.
  double kth_deviation_without(size_t k, double center, const std::vector<double>& own) const;
  std::optional<double> median_without(const std::vector<double>& own) const;

  std::vector<double> pool_;  // sorted
  std::map<int32_t, Values> members_;
};

}  // namespace slowburn
