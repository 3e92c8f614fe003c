// A sequential test on per-instance evidence: Page's CUSUM of the Bernoulli
// log-likelihood ratio (equivalently, Wald SPRTs restarted at zero).
//
// Each observation says whether an event happened (here: the rank arrived
// last in a collective instance by a lead of a meaningful share of the step).
// Under H0 (healthy) its probability is at most p0, under H1 (straggler) p1:
//   S_n = max(0, S_{n-1} + (event ? ln(p1/p0) : ln((1-p1)/(1-p0))))
// alarm while S_n >= h.
// False alarms: under H0 each restart of S from zero is an SPRT that reaches h
// with probability at most e^-h (Wald's likelihood-ratio identity), so the
// in-control average run length is at least e^h observations (Lorden 1971).
// The threshold is therefore derived from a target ARL0: h = ln(ARL0).
// Detection: about (h + one step's overshoot) / KL(p1 || p0) observations
// once the event rate is p1. The statistic is held at most 2h (a ceiling that
// changes neither alarm time nor false alarms): a rank that recovers leaves
// alarm after h / |quiet step| observations, not after as many as it was slow.
#pragma once

#include <cstdint>
#include <optional>

namespace slowburn {

struct SequentialParams {
  double p0 = 0.10;   // healthy: event rate at most this
  double p1 = 0.50;   // straggler: event rate at least this
  double arl0 = 1e8;  // observations between false alarms under H0, at least
};

class BernoulliCusum {
 public:
  explicit BernoulliCusum(SequentialParams params = {});

  // h = ln(ARL0): Lorden's bound ARL0 >= e^h, solved for h.
  static double threshold_for_arl(double arl0);
  // Observations to alarm from zero when the event rate is p, to first order
  // (h / E_p[step], without the overshoot); none when the drift is not positive.
  std::optional<double> expected_delay(double p) const;

  // Feeds one observation; returns true while in alarm.
  bool add(bool event);
  // Feeds `observations` of which `events` were events, in an order not
  // known (counts the kernel kept over an interval): the statistic moves by
  // their summed steps, clamped once. Clamping at zero on the way only
  // raises a CUSUM, so this stays at or below what the observations one by
  // one would give: the false-alarm bound holds, an alarm may come a batch
  // later.
  bool add_counts(uint64_t observations, uint64_t events);
  double statistic() const { return sum_; }
  double threshold() const { return threshold_; }
  double ceiling() const { return 2 * threshold_; }
  bool alarmed() const { return sum_ >= threshold_; }
  // Observations and events since the statistic last left zero: the run the
  // current evidence comes from.
  uint64_t run_observations() const { return run_observations_; }
  uint64_t run_events() const { return run_events_; }
  double event_step() const { return event_step_; }
  double quiet_step() const { return quiet_step_; }
  const SequentialParams& params() const { return params_; }
  void reset();

 private:
  SequentialParams params_;
  double event_step_;  // ln(p1/p0) > 0
  double quiet_step_;  // ln((1-p1)/(1-p0)) < 0
  double threshold_;
  double sum_ = 0;
  uint64_t run_observations_ = 0;
  uint64_t run_events_ = 0;
};

}  // namespace slowburn
