// The probe mode's choice of what to trap, and its circuit breaker. Pure.
//
// Selection: in a training step the straggler shows in the collective that
// follows compute (it arrives last there); the collectives issued right
// after it (an allreduce after an allgather) start synchronised and carry
// little. Each synchronising probe's compute gap (the time since the
// process's previous traced return) tells them apart: a probe whose median
// gap is under `redundant_gap_share` of the largest probe's is "redundant"
// and is sampled on a duty cycle (on for one window in every
// `sample_period_windows`); the others carry the signal and stay on. Roles
// are learnt again from every interval in which the probe and every signal
// probe were on, so a sampled probe's on-phases are its re-checks.
//
// Budget: every probe's cost is its call rate while on times a per-call cost
// calibrated at start-up, and what a duty cycle costs is its toggles (a
// probe's link set detached and attached again in each rank it is in, also
// calibrated). Over budget, sampled probes are cut first (longer periods,
// down to `max_sample_period_windows`), then the signal probes but the
// cheapest one, then that one by a duty cycle whose off-phase never exceeds
// `max_dark_windows` windows: the detector forgets a rank's history after
// persistence_n windows unjudged, so a longer dark phase would blind it. A
// duty cycle is used only where its toggles cost at most `cycle_cost_share`
// of what it saves. Where nothing fits, the signal probe stays on and the
// plan says the budget is exceeded, and why: a budget may cost detail,
// never the verdict.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace slowburn {

struct BudgetConfig {
  double budget_ratio = 0.01;  // of one CPU, on average over a duty cycle; 0: off
  double call_cost_ns = 0;     // calibrated: one traced call
  double toggle_cost_ns = 0;   // calibrated: one link set detached and attached again, per rank
  int window_intervals = 5;    // the detector's window, in intervals
  int max_dark_windows = 3;    // a signal probe's longest off-phase (persistence_n - 2)
  double cycle_cost_share = 0.1;
  bool select = true;  // sample the redundant probes even under budget
  double redundant_gap_share = 0.2;
  uint64_t min_compute_gap_ns = 1'000'000;  // below this no probe follows compute: all carry the signal
  int sample_period_windows = 6;
  int max_sample_period_windows = 24;
};

// One probe's interval, from the kernel's sums.
struct ProbeReading {
  uint64_t calls = 0;            // completed while attached
  int ranks = 0;                 // processes it is attached in (each toggles its own links)
  std::optional<double> gap_ns;  // median over ranks of the mean compute gap; none: not synchronising
  bool synchronizing = false;
};

enum class ProbeRole { unknown, signal, redundant };
const char* probe_role_name(ProbeRole role);

struct ProbePlan {
  ProbeRole role = ProbeRole::unknown;
  double full_ratio = 0;  // share of a CPU while on
  int on_intervals = 1;   // duty cycle: on, then off (0: always on)
  int off_intervals = 0;
  bool on = true;  // now
  double duty() const { return off_intervals == 0 ? 1.0 : double(on_intervals) / (on_intervals + off_intervals); }
};

struct BudgetDecision {
  double estimated_ratio = 0;                 // attached probes, this interval
  double planned_ratio = 0;                   // on average over the duty cycles, toggles included
  std::map<std::string, double> probe_ratio;  // per probe, this interval
  std::vector<std::string> throttle;          // detach now
  std::vector<std::string> restore;           // attach again now
  std::vector<std::string> messages;          // what changed and why, for the log
};

class OverheadBudget {
 public:
  explicit OverheadBudget(BudgetConfig config) : config_(config) {}

  // readings: per probe, this interval (probes that are off read 0 calls).
  BudgetDecision update(uint64_t interval_ns, const std::map<std::string, ProbeReading>& readings);

  bool throttled(const std::string& probe) const;
  uint64_t throttle_count(const std::string& probe) const;
  const std::map<std::string, ProbePlan>& plans() const { return plans_; }
  const BudgetConfig& config() const { return config_; }

 private:
  struct State {
    ProbePlan plan;
    int phase_left = 0;  // intervals left in the current on- or off-phase
    uint64_t throttles = 0;
    int ranks = 0;
    bool synchronizing = false;
    std::optional<double> gap_ns;  // the latest valid reading
  };
  void learn_roles(const std::map<std::string, ProbeReading>& readings);
  // Returns what the budget could not hold, keyed so it is logged once: (key, message), or empty.
  std::pair<std::string, std::string> replan(uint64_t interval_ns);
  double cycle_cost_ratio(const State& s, int on, int off, uint64_t interval_ns) const;
  bool cycle_pays(const State& s, int on, int off, uint64_t interval_ns) const;

  BudgetConfig config_;
  std::map<std::string, State> probes_;
  std::map<std::string, ProbePlan> plans_;
  std::string last_note_;
};

}  // namespace slowburn
