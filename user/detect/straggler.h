// The straggler detector: names the rank that arrives last, not the ranks
// that wait longest. Pure: fed decoded calls with their communicator, and a
// clock; no BPF, no files.
//
// Calls are grouped into lanes, one per (probe, communicator): a job's
// tensor-parallel groups, data-parallel groups and the world are separate
// collectives with separate instances. Per window and lane, every aligned
// instance charges `blame` to the rank that arrived last: how much later than
// the second-to-last it came, counting only what its own delay since its
// previous collective let it go explains (a rank released late by another
// communicator's collective is late there, not here: the culprit upstream
// carries that blame; nor is its usual time to leave that collective its
// own: sb_leave_allowance in slowburn/instance_rules.h). A rank is flagged in a
// window when, on some lane, the tests of detect/verdict.h hold (enough instances, effect size, last
// often or most of the blame, unique worst, robust z). A finding needs
// persistence: flagged in persistence_m of the last persistence_n evaluated
// windows. Healthy jobs have systematic per-rank asymmetries (collective
// algorithm, CPU placement) that give large z on small MADs; the
// effect-size floor and uniqueness are what keep them quiet.
//
// Slow onsets: a per-(lane, rank) upper CUSUM of the rank's normalised
// compute gap (its median gap minus its peers', as a share of the step
// period, in units of cusum_unit_share) raises a finding ("cusum") when it
// alarms while the rank is the unique worst above cusum_min_blame_share in
// persistence_m of the last persistence_n windows: a one-window spike never
// does.
//
// Sustained or not: a finding opens a run that lasts until the rank is
// clear for persistence_n windows. The session's verdict names the ranks
// whose runs were flagged in at least sustained_fraction of the windows
// since they began; shorter runs are episodes (when, how long, the cost).
//
// Hangs (straggler_hangs.cpp): each member's position on each communicator
// (its completed collectives there, across probes, aligned by the
// instances) and the calls in flight give the wavefront (detect/wavefront.h):
// once ranks have waited in it for hang_ns, the members behind it, gone, or
// whose process does not run are named ("in-flight"), the ranks blocked
// behind them in an earlier instance said, and ranks at one position in
// different collectives named as a mismatch. A rank that ends by a signal,
// an OOM kill or a non-zero status is a failure ("lifecycle"), the first one
// named with the ranks that ended after it.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/rank_identity.h"
#include "detect/aligner.h"
#include "detect/cost_onset.h"
#include "detect/inside.h"
#include "detect/own_cpu_causes.h"
#include "detect/report.h"
#include "detect/session_cost.h"
#include "events/call_event.h"
#include "events/communicator.h"
#include "probes/catalog.h"
#include "stats/cusum.h"
#include "stats/peer_sample.h"

namespace slowburn {

struct DetectorConfig {
  uint64_t window_ns = 500'000'000;
  uint64_t grace_ns = 200'000'000;  // wait this long for late records before closing a window
  double z_threshold = 3.5;
  int persistence_m = 3;
  int persistence_n = 5;
  double min_blame_share = 0.10;
  double min_last_fraction = 0.5;
  double min_blame_dominance = 0.5;  // or: at least this share of every rank's blame (late in bursts)
  double uniqueness_ratio = 2.0;
  uint64_t min_instances = 5;
  double cusum_unit_share = 0.02;  // 1 CUSUM unit = a gap excess of 2% of the step
  double cusum_allowance = 0.5;    // excesses under 1% of the step never accumulate
  double cusum_decision = 20.0;    // a 4%-of-step excess (+1.5 a window) alarms in 14 windows, 2% in 40
  double cusum_min_blame_share = 0.05;
  double sustained_fraction = 0.5;     // a finding held when flagged in this share of the windows since it began
  uint64_t idle_ns = 2'000'000'000;    // others completed calls this long ago without a rank
  uint64_t hang_ns = 10'000'000'000;   // inside a collective this long while others are absent
  uint64_t settle_ns = 1'000'000'000;  // a communicator whose members are learnt from its calls: wait for them
  uint64_t clock_tolerance_ns = 0;     // analyze: calls on merged node clocks agree to within this
  // The sequential test (stats/sequential.h), per (lane, rank), on every
  // aligned instance: the event is "arrived last, by a self-caused lead of at
  // least sequential_lead_share of the lane's step". A healthy rank has it at
  // most seq_p0 of the time, a straggler at least seq_p1; the threshold is
  // ln(seq_arl0), so a rank at p0 raises a false alarm at most once in
  // seq_arl0 instances. A 1.3x rank last in every instance is named after
  // ceil(ln(1e8) / ln(5)) = 12 instances.
  bool sequential = true;
  double sequential_lead_share = 0.10;  // the blame floor, per instance
  double seq_p0 = 0.10;
  double seq_p1 = 0.50;
  double seq_arl0 = 1e8;
  // The straggler that arrives on time (detect/inside.h): flagged in a
  // window when its thread waited for a CPU inside its calls, set apart
  // from its peers'; named after persistence_m of persistence_n windows.
  bool inside = true;
  InsideThresholds inside_thresholds;
  // The slow burn (detect/session_cost.h): at the verdict, per lane, the
  // rank whose own lateness over the whole session costs the job
  // session_cost.min_cost_share of the traced time, alone and beyond
  // chance; every straggler's severity from its cost.
  bool session_cost = true;
  SessionCostThresholds session_cost_thresholds;
};

struct DetectorCounters {
  uint64_t calls = 0;
  uint64_t unknown_process = 0;  // calls from a pid that is not a registered rank
  uint64_t sequence_gaps = 0;    // calls missing between two recorded ones (lost records)
  uint64_t discarded_calls = 0;  // calls that matched no instance across ranks
  uint64_t late_calls = 0;       // calls or instances whose window had closed: left out of window statistics
  uint64_t instances = 0;
  uint64_t aligned_by_sequence = 0;  // instances found by (communicator, sequence number)
  uint64_t order_mismatches = 0;     // by sequence, whose clocks disagreed: dropped

  DetectorCounters& operator+=(const DetectorCounters& other);
};

struct DetectorOutput {
  std::vector<WindowReport> windows;
  std::vector<Finding> findings;
  std::vector<std::string> notes;  // ranks leaving or rejoining alignment, exits
};

struct ProbeInfo {
  uint32_t id = 0;
  std::string name;
  CallKind kind = CallKind::function;
};

// The part of the last arrival's lead over the second-to-last that it caused
// itself: how much longer it took since its previous collective released it
// (all of the lead when that is unknown).
uint64_t self_caused_lead_ns(const RankCall& last, const RankCall& second);
// How much later than usual the rank left its previous collective: its time
// since that collective let it go, beyond its compute gap (0 when unknown).
uint64_t leaving_excess_ns(const RankCall& call);

class StragglerDetector {
 public:
  StragglerDetector(DetectorConfig config, std::vector<ProbeInfo> probes);
  ~StragglerDetector();
  StragglerDetector(StragglerDetector&&) noexcept;
  StragglerDetector& operator=(StragglerDetector&&) noexcept;

  void add_rank(const RankIdentity& rank);
  // The rank's probe is attached: on the communicators it calls that probe
  // on it takes part in the alignment from the start (otherwise the first
  // ranks to report would form instances without the later ones) until it
  // shows it does not.
  void add_participant(uint32_t probe_id, int32_t pid);
  // The process exited: it leaves every alignment; its identity and findings
  // stay (its last windows are still evaluated). `end`: how, where the
  // kernel said (a failure when it failed).
  void remove_rank(int32_t pid, DetectorOutput& out, const std::optional<ProcessEnd>& end = std::nullopt);

  // A completed call and the communicator it ran on.
  void ingest(const CallEvent& call, const CallComm& comm);
  // The node set the rank's data path apart (detect/inside.h): evidence
  // for the inside test in the windows the event covers. On the calls'
  // clock.
  void transport_evidence(int32_t pid, TransportEvidence evidence);
  // The node said the rank's own cgroup throttled it (causes.h,
  // own_cpu_cause_of; on the calls' clock): its lateness is not the
  // scheduler's choice where that covers half of the stretch judged.
  void own_cpu_cause(const OwnCpuCause& cause) { own_cpu_causes_.said(cause); }

  // Closes the windows that ended at least grace_ns before now_ns.
  DetectorOutput advance(uint64_t now_ns);
  // The kernel's view of a rank's process now, its CPU time counted since
  // `since_ns` (nullopt: not known). Live: read from /proc; analyze: the
  // recorded states.
  using ProcessLookup = std::function<std::optional<ProcessView>(int32_t pid, uint64_t since_ns)>;
  // Hang check on the calls the kernel reports in flight.
  DetectorOutput check_in_flight(uint64_t now_ns, const std::vector<InFlightCall>& calls,
                                 const ProcessLookup& kernel = {});
  // Closes every open window, the last one partial.
  DetectorOutput finish(uint64_t now_ns);

  // Every finding emitted so far, in the order emitted, costs brought up
  // to date (not those held back as the scheduler's choice: the verdict
  // says what became of them).
  std::vector<Finding> findings() const;
  // What the session concludes (after finish()).
  SessionVerdict verdict(uint64_t now_ns) const;
  const DetectorCounters& counters() const { return counters_; }
  const DetectorConfig& config() const { return config_; }
  // Total blame charged to a rank on a probe (every communicator) since tracing began.
  uint64_t blame_ns(uint32_t probe_id, int32_t pid) const;
  // Of that, what leaving its previous collective late explains (the kernel's blame_leaving_ns).
  uint64_t blame_leaving_ns(uint32_t probe_id, int32_t pid) const;
  // Instances of a probe (every communicator) the rank arrived last in.
  uint64_t lasts(uint32_t probe_id, int32_t pid) const;
  // Of those, the sequential test's events (the kernel's seq_events, collagg.h).
  uint64_t sequential_events(uint32_t probe_id, int32_t pid) const;
  // Sees every aligned instance of a synchronizing collective as it is
  // accounted (analyze checks its merged clocks against the waits).
  using InstanceTap = std::function<void(const CollectiveInstance&)>;
  void set_instance_tap(InstanceTap tap) { instance_tap_ = std::move(tap); }

 private:
  struct LaneKey {
    uint32_t probe_id = 0;
    uint32_t comm_id = 0;
    auto operator<=>(const LaneKey&) const = default;
  };
  struct Mark {
    bool flagged = false;       // passed every test on some lane
    bool cusum_worst = false;   // unique worst above the CUSUM floor on some lane
    bool sequential = false;    // its sequential test in alarm after an instance of the window, on some lane
    bool inside = false;        // the inside test held on some lane
    double blame_ns = 0;        // its blame in the window, every lane
    double inside_cost_ns = 0;  // what collectives waited for its CPU in the window, every lane
    uint64_t start_ns = 0;
  };
  struct Lane;
  struct RankAccum;
  struct LaneAccum;
  struct Window;
  struct Run;
  struct WindowBest;

  Lane& lane_for(uint32_t probe_id, const CallComm& comm);
  // `alive`: only ranks still running (alignment); false: exited members too (hangs).
  bool eligible(const Lane& lane, int32_t pid, bool alive = true) const;
  void take_instances(const LaneKey& key, Lane& lane, uint64_t now_ns, bool members_final = false);
  // advance(); members_final at the end, when no member is still to come.
  DetectorOutput advance_to(uint64_t now_ns, bool members_final);
  void account_instance(const LaneKey& key, Lane& lane, CollectiveInstance instance);
  // The open window holding ts_ns, or nullptr (counted late) if it closed.
  Window* window_for(uint64_t ts_ns);
  // Closes the windows that ended grace_ns before now_ns, or all of them.
  void close_windows(uint64_t now_ns, bool all, DetectorOutput& out);
  void close_window(Window& window, uint64_t now_ns, DetectorOutput& out);
  // A probe's calls in a window on communicators of one size, per rank:
  // what a rank's lateness and gap are judged against (a tensor-parallel
  // group of 2 has no peers of its own; the other groups of 2 doing the same
  // step do, the world all-reduce a step later does not compare).
  struct PeerPool {
    std::map<int32_t, std::vector<double>> lateness_ns, gaps_ns;
    std::optional<PeerSample> lateness, gaps;  // the same, sorted once for every lane of the pool
  };
  WindowReport evaluate(const Window& window, const LaneKey& key, const LaneAccum& accum, const PeerPool& pool,
                        uint64_t elapsed_ns);
  void cusum_findings(const WindowReport& report, std::set<int32_t>& cusum_flagged, uint64_t now_ns,
                      DetectorOutput& out);
  void update_persistence(int32_t pid, const WindowBest& best, uint64_t now_ns, DetectorOutput& out);
  // straggler_inside.cpp: an instance's CPU times into its window; a lane's
  // window judged (who waited for a CPU inside, set apart from its peers).
  void account_inside(LaneAccum& accum, const CollectiveInstance& instance, uint64_t last_arrival_ns);
  void judge_lane_inside(Lane& lane, const LaneAccum& accum, WindowReport& report, uint64_t elapsed_ns);
  // Once every lane of a window is judged: a rank late because another's
  // data path held it, on any lane of the communicator, is not flagged.
  void clear_held_by_data_path(std::vector<WindowReport>& reports, size_t first);
  // The collective slower for everyone: said when it holds in persistence_m of persistence_n windows.
  void judge_slow_for_all(Lane& lane, const WindowReport& report, bool anyone_apart);
  std::vector<std::string> inside_notes_;  // emitted by the window's close
  // The members of the lane whose data path the node set apart in the window: pid -> what it said.
  // Forgets what no later window can weigh.
  std::map<int32_t, std::string> transport_in(const LaneAccum& accum, const WindowReport& report);
  std::map<int32_t, std::multimap<uint64_t, TransportEvidence>> transport_;  // per rank, by when said
  OwnCpuCauses own_cpu_causes_;  // when the node said each rank's cgroup throttled it
  // Per rank: windows its flag was cleared as held by another's data path,
  // and windows it stayed flagged beside a rank flagged so (its own).
  std::map<int32_t, HeldByPath> held_by_path_;
  // Per communicator key and rank: the end of the latest window it was
  // flagged inside by its data path in (held_inside_by_path).
  std::map<std::string, std::map<int32_t, uint64_t>> path_flagged_end_ns_;
  void raise_finding(Finding finding, int32_t pid, DetectorOutput& out);
  const Lane* lane_of(const Finding& f) const;            // the lane a finding is on, or nullptr
  bool spell_of(const Run& run, const Lane& lane) const;  // its finding is on the lane
  // A late run still open at the end whose rank still computes longer than
  // its peers on the finding's lane (its compute-gap CUSUM alarmed and
  // rising): held though flagged in under half its windows.
  bool still_slower(const Run& run) const;
  // An episode whose cost the slow burn named on its lane counts, its rank
  // still computing longer than its peers there (slow_burn says why).
  bool in_slow_burn(const Episode& e, const SessionVerdict& v) const;
  // Where no robust z could judge (a pair, no other ranks in its pool) and
  // the window rule flagged its partner in at least half as many windows
  // of the session as it (who is late alternates): its flagged windows and
  // its partner's.
  std::optional<std::pair<int, int>> alternating_rival(const Finding& f) const;
  // The verdict's stragglers by session cost, on ranks it does not name yet.
  void session_cost_findings(SessionVerdict& verdict) const;
  // Moves to the verdict's withheld the other rules' minor findings whose
  // lane says the scheduler chose who came last (detect/session_cost.h).
  void withhold_schedulers_choices(SessionVerdict& verdict) const;
  // The run-queue shares that make a window, sequential or CUSUM finding
  // the scheduler's choice (minor, late in bursts or under half the major
  // floor, on a lane whose members all wait for a CPU, its typical step no
  // longer than theirs); nullopt where it is the rank's own. Judged live
  // and at the verdict alike.
  std::optional<RunqShares> schedulers_choice_of(const Finding& f) const;
  // A late finding the verdict withholds as held inside by another rank's
  // data path (verdict.h withhold_held_by_data_path), while that rank's
  // inside finding stands on its communicator: no live line of its own
  // either.
  bool held_inside_by_path(const Finding& f, uint64_t now_ns) const;
  // A finding of a pair judged with no z (no third rank): the share of its
  // blame on its lane over the session from leaving its previous
  // collective late, and its cost net of that, what the scheduler's rule
  // judges it by (nullopt for any other finding).
  struct PairCost {
    double leaving_share = 0;
    double own_cost_share = 0;
  };
  std::optional<PairCost> pair_own_cost(const Finding& f) const;
  // Late in bursts as its summary says it (detect/verdict.h), or a cost
  // under half the major floor: judged by the scheduler's rule whatever
  // its lane.
  bool late_in_bursts_or_small(const Finding& f) const;
  // Live, such a finding is held back (its run still counts; the verdict
  // withholds it, names it or lists it as an episode) and emitted once it
  // no longer reads as the scheduler's, while its run stands.
  void emit_or_hold(size_t index, const Finding& f, DetectorOutput& out);
  void release_held(uint64_t now_ns, DetectorOutput& out);
  bool held_back(int32_t pid) const;
  std::vector<size_t> held_back_;  // indices into findings_
  std::vector<size_t> emitted_;    // indices into findings_, in the order emitted
  // Every finding raised, emitted or held, costs brought up to date.
  std::vector<Finding> all_findings() const;
  Finding current(size_t index) const;  // findings_[index], its cost and summary as of now
  // The lane's slow burn over the session so far (traced_ns), when every
  // test holds and what it cost outside its closed episodes passes the floor.
  struct SlowBurn;
  LaneSnapshot session_totals(const Lane& lane, uint64_t now_ns) const;
  // before: judged on the stretch since that snapshot (finding's evidence
  // `latest`), else on the whole session.
  std::optional<SlowBurn> slow_burn(const LaneKey& key, const Lane& lane, const LaneSnapshot& session,
                                    const LaneSnapshot* before) const;
  // The same rule live, every kSlowBurnEveryNs of the job's clock as windows
  // close, once kSlowBurnLatestNs are traced: over the session so far, and
  // over its latest kSlowBurnLatestNs (a ramp passes the floor there long
  // before its average does). A rank it names while no other rule's finding
  // stands on it is raised once by this rule (the others may still raise
  // theirs: it got worse); the verdict's session-cost finding keeps when it
  // was first found.
  void live_session_cost(uint64_t now_ns, DetectorOutput& out);
  // A rank the live rule raised that the verdict names nowhere: an episode, said.
  void slow_burn_episodes(SessionVerdict& verdict, const std::vector<Finding>& all, uint64_t now_ns) const;
  std::map<int32_t, uint64_t> slow_burn_found_ns_;  // rank -> when the live rule first named it
  uint64_t slow_burn_checked_ns_ = 0;
  std::map<LaneKey, std::deque<LaneSnapshot>> slow_burn_snapshots_;  // per lane, from kSlowBurnLatestNs ago
  // Per lane, every rank's own cost summed, every kSlowBurnSnapshotEveryNs
  // over the whole session (halved in resolution past a bound): when a
  // slow burn began (detect/cost_onset.h).
  struct CostPoint {
    uint64_t at_ns = 0, last_ns = 0, instances = 0;    // last_ns: the session's latest call then
    std::vector<std::pair<int32_t, uint64_t>> own_ns;  // by pid, sorted
  };
  struct CostHistory {
    std::vector<CostPoint> points;
    uint64_t stride_ns = 10'000'000'000;  // doubles each time the points are halved
  };
  std::map<LaneKey, CostHistory> slow_burn_history_;
  void keep_cost_point(const LaneKey& key, const LaneSnapshot& now);
  std::optional<CostOnset> onset_of(const LaneKey& key, const Lane& lane, const LaneSnapshot& now, int32_t pid,
                                    double floor_share) const;
  static std::map<int32_t, LaneRankTotals> lane_totals(const Lane& lane);  // a lane's session, per rank
  // Its compute-gap CUSUM alarmed, and risen over its latest judged windows.
  static bool gap_excess_sustained(const Lane& lane, int32_t pid);
  // Feeds every member's sequential test with one instance; raises a
  // finding (emitted by the next advance) when one alarms.
  void sequential_test(Lane& lane, const CollectiveInstance& instance, const RankCall& last, uint64_t blame_ns,
                       uint64_t blame_leaving_ns, double median_entry_ns);
  Finding sequential_finding(const Lane& lane, int32_t pid) const;
  // A finding of `type` on `pid` in the lane: its rank, probe, communicator and rank in it.
  Finding lane_finding(const Lane& lane, int32_t pid, const char* type, const char* detector) const;
  void emit_pending(uint64_t now_ns, DetectorOutput& out);
  void track_runs(int32_t pid, const Mark& mark, bool cleared);
  struct CommHang;
  void check_comm_hang(uint32_t comm_id, const std::vector<const InFlightCall*>& calls, uint64_t now_ns,
                       const ProcessLookup& kernel, DetectorOutput& out);
  // Each member's count of completed collectives on a communicator, and the
  // offset that puts it on the instances' common scale.
  uint64_t count_completed(uint32_t comm_id, int32_t pid, uint64_t exit_ns);
  void learn_positions(uint32_t comm_id, const CollectiveInstance& instance);
  void raise_failure(int32_t pid, const ProcessEnd& end, DetectorOutput& out);
  // A rank ended after a failure: the first failure's followers.
  void follow_failures(int32_t pid, uint64_t ended_ns);
  uint64_t total_blame_ns(int32_t pid) const;
  // A per-rank total of the lanes of one probe (every probe: none).
  uint64_t sum_lanes(std::optional<uint32_t> probe_id, int32_t pid, std::map<int32_t, uint64_t> Lane::*total) const;
  const RankIdentity& identity(int32_t pid) const;

  DetectorConfig config_;
  std::map<uint32_t, ProbeInfo> probes_;
  std::map<uint32_t, std::set<int32_t>> attached_;  // probe -> ranks it is attached in
  std::map<LaneKey, std::unique_ptr<Lane>> lanes_;
  std::map<int32_t, RankIdentity> identities_;  // every rank ever added, exited ones too
  std::set<int32_t> alive_;
  std::map<uint64_t, std::unique_ptr<Window>> windows_;  // by window index, open ones
  std::map<uint64_t, uint64_t> last_seq_;                // (tid << 32 | probe) -> seq
  std::map<int32_t, uint64_t> last_exit_by_pid_;  // the rank's latest traced return: its compute gap starts there
  // Per rank, recent calls' exit -> the release of the instance they were
  // in (its earliest exit): where the next call's own delay starts.
  std::map<int32_t, std::map<uint64_t, uint64_t>> releases_;
  std::map<int32_t, std::deque<Mark>> history_;  // per rank: the last persistence_n evaluated windows
  std::set<int32_t> active_findings_;            // ranks with a standing finding (either test)
  std::map<int32_t, std::vector<Run>> runs_;     // per rank: its findings' lives
  struct MemberProgress {
    uint64_t completed = 0;  // its completed synchronizing calls on the communicator, counted here
    int64_t offset = 0;      // + this: its position on the instances' scale
    uint64_t last_exit_ns = 0;
  };
  std::map<uint32_t, std::map<int32_t, MemberProgress>> progress_;  // communicator -> member -> progress
  std::map<uint32_t, std::unique_ptr<CommHang>> hangs_;             // communicator -> its standing hang
  std::map<uint32_t, PendingHang> pending_;                         // communicator -> its wait below hang_ns
  std::map<int32_t, std::string> last_inside_;  // at the latest in-flight check: rank -> the collective it was in
  std::vector<size_t> failures_;                // findings_ of type failure, in the order they ended
  std::vector<Finding> findings_;
  std::vector<size_t> pending_findings_;  // raised between advances (sequential): emitted by the next one
  DetectorCounters counters_;
  uint64_t first_ns_ = 0;             // first call entry seen: the traced time starts here
  uint64_t last_ns_ = 0;              // latest call exit seen
  uint64_t closed_before_index_ = 0;  // windows below this index are closed
  int windows_judged_ = 0;            // windows with a lane that had enough instances to judge
  InstanceTap instance_tap_;
};

}  // namespace slowburn
