// One-sided upper CUSUM (Page 1954) on a normalised series: catches a slow,
// sustained shift that never crosses a per-window threshold.
//   S_t = max(0, S_{t-1} + x_t - k); alarm while S_t > h.
// x is expected in "sigmas" (a z-like value); k is the allowance (half the
// shift to detect), h the decision interval. Defaults k = 0.5, h = 5 detect a
// 1-sigma shift with an in-control run length of several hundred windows.
#pragma once

namespace slowburn {

class Cusum {
 public:
  explicit Cusum(double allowance = 0.5, double decision_interval = 5.0)
      : allowance_(allowance), decision_interval_(decision_interval) {}

  // Feeds one observation; returns true while in alarm.
  bool add(double x);
  double statistic() const { return sum_; }
  bool alarmed() const { return sum_ > decision_interval_; }
  void reset() { sum_ = 0; }
  // Goes on from a statistic kept elsewhere (a service's state file).
  void resume(double statistic) { sum_ = statistic > 0 ? statistic : 0; }

 private:
  double allowance_;
  double decision_interval_;
  double sum_ = 0;
};

}  // namespace slowburn
