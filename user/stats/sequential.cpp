#include "stats/sequential.h"

#include <algorithm>
#include <cmath>

namespace slowburn {

BernoulliCusum::BernoulliCusum(SequentialParams params)
    : params_(params),
      event_step_(std::log(params.p1 / params.p0)),
      quiet_step_(std::log((1 - params.p1) / (1 - params.p0))),
      threshold_(threshold_for_arl(params.arl0)) {}

double BernoulliCusum::threshold_for_arl(double arl0) { return std::log(std::max(arl0, 1.0)); }

std::optional<double> BernoulliCusum::expected_delay(double p) const {
  double drift = p * event_step_ + (1 - p) * quiet_step_;
  if (drift <= 0) return std::nullopt;
  return threshold_ / drift;
}

bool BernoulliCusum::add(bool event) {
  double next = sum_ + (event ? event_step_ : quiet_step_);
  if (next <= 0) {
    sum_ = 0;
    run_observations_ = 0;
    run_events_ = 0;
  } else {
    sum_ = std::min(next, ceiling());
    ++run_observations_;
    run_events_ += event;
  }
  return alarmed();
}

bool BernoulliCusum::add_counts(uint64_t observations, uint64_t events) {
  if (observations == 0) return alarmed();
  events = std::min(events, observations);
  double next =
      sum_ + static_cast<double>(events) * event_step_ + static_cast<double>(observations - events) * quiet_step_;
  if (next <= 0) {
    reset();
  } else {
    sum_ = std::min(next, ceiling());
    run_observations_ += observations;
    run_events_ += events;
  }
  return alarmed();
}

void BernoulliCusum::reset() {
  sum_ = 0;
  run_observations_ = 0;
  run_events_ = 0;
}

}  // namespace slowburn
