#include "service/probe_state.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>

#include "core/files.h"
#include "detect/aggregate_detector.h"
#include "procfs/ranks.h"

namespace slowburn {

using nlohmann::json;

namespace {
constexpr int kVersion = 1;

json snapshot_json(const LaneSnapshot& s) {
  json ranks = json::array();
  for (const auto& [pid, t] : s.ranks)
    ranks.push_back({{"pid", pid},
                     {"lasts", t.lasts},
                     {"blame_ns", t.blame_ns},
                     {"blame_leaving_ns", t.blame_leaving_ns},
                     {"inside_ns", t.inside_ns},
                     {"runq_ns", t.runq_ns ? json(*t.runq_ns) : json(nullptr)}});
  return {{"at_ns", s.at_ns}, {"traced_ns", s.traced_ns}, {"instances", s.instances}, {"ranks", std::move(ranks)}};
}

LaneSnapshot snapshot_of(const json& j) {
  LaneSnapshot s;
  s.at_ns = j.at("at_ns").get<uint64_t>();
  s.traced_ns = j.at("traced_ns").get<uint64_t>();
  s.instances = j.at("instances").get<uint64_t>();
  for (const json& r : j.at("ranks")) {
    LaneRankTotals& t = s.ranks[r.at("pid").get<int32_t>()];
    t.lasts = r.at("lasts").get<uint64_t>();
    t.blame_ns = r.at("blame_ns").get<uint64_t>();
    t.blame_leaving_ns = r.at("blame_leaving_ns").get<uint64_t>();
    t.inside_ns = r.at("inside_ns").get<uint64_t>();
    if (!r.at("runq_ns").is_null()) t.runq_ns = r.at("runq_ns").get<uint64_t>();
  }
  return s;
}

json lane_json(const AggSlowBurnLane& lane) {
  json kept = json::array(), points = json::array();
  for (const LaneSnapshot& k : lane.kept) kept.push_back(snapshot_json(k));
  for (const AggCostPoint& p : lane.points)
    points.push_back({{"at_ns", p.at_ns}, {"traced_ns", p.traced_ns}, {"own_ns", p.own_ns}});
  return {{"job", lane.job},
          {"communicator", lane.comm_key},
          {"probe", lane.probe},
          {"first_ns", lane.first_ns},
          {"totals", snapshot_json(lane.totals)},
          {"kept", std::move(kept)},
          {"points", std::move(points)},
          {"stride_ns", lane.stride_ns},
          {"gap_cusum", lane.gap_cusum},
          {"gap_alarmed_ns", lane.gap_alarmed_ns}};
}

AggSlowBurnLane lane_of(const json& j) {
  AggSlowBurnLane lane;
  lane.job = j.at("job").get<std::string>();
  lane.comm_key = j.at("communicator").get<std::string>();
  lane.probe = j.at("probe").get<std::string>();
  lane.first_ns = j.at("first_ns").get<uint64_t>();
  lane.totals = snapshot_of(j.at("totals"));
  for (const json& k : j.at("kept")) lane.kept.push_back(snapshot_of(k));
  for (const json& p : j.at("points"))
    lane.points.push_back({p.at("at_ns").get<uint64_t>(), p.at("traced_ns").get<uint64_t>(),
                           p.at("own_ns").get<std::vector<std::pair<int32_t, uint64_t>>>()});
  for (AggCostPoint& p : lane.points) std::sort(p.own_ns.begin(), p.own_ns.end());  // looked up by pid
  lane.stride_ns = j.at("stride_ns").get<uint64_t>();
  // Added at stop 59: a state file written before has none (its drifts
  // start again from zero).
  if (j.contains("gap_cusum")) lane.gap_cusum = j.at("gap_cusum").get<std::map<int32_t, double>>();
  if (j.contains("gap_alarmed_ns")) lane.gap_alarmed_ns = j.at("gap_alarmed_ns").get<std::map<int32_t, uint64_t>>();
  return lane;
}
}  // namespace

json probe_state_json(const ProbeServiceState& state) {
  json lanes = json::array();
  for (const AggSlowBurnLane& lane : state.slow_burn.lanes) lanes.push_back(lane_json(lane));
  json ranks = json::array();
  for (const auto& [pid, ticks] : state.start_ticks) ranks.push_back({{"pid", pid}, {"start_ticks", ticks}});
  return {
      {"version", kVersion}, {"boot_id", state.boot_id}, {"ranks", std::move(ranks)}, {"slow_burn", std::move(lanes)}};
}

Result<ProbeServiceState> probe_state_from_json(const json& j) {
  try {
    if (!j.is_object() || j.value("version", 0) != kVersion)
      return make_error("not a version {} state of slowburn probe", kVersion);
    ProbeServiceState state;
    state.boot_id = j.at("boot_id").get<std::string>();
    for (const json& r : j.value("ranks", json::array()))
      state.start_ticks[r.at("pid").get<int32_t>()] = r.at("start_ticks").get<uint64_t>();
    for (const json& lane : j.at("slow_burn")) state.slow_burn.lanes.push_back(lane_of(lane));
    return state;
  } catch (const json::exception& e) {
    return make_error("malformed: {}", e.what());
  }
}

Result<void> save_probe_state(const std::filesystem::path& path, const ProbeServiceState& state) {
  // Written whole, synced, then renamed over the old one: after a crash or
  // a power loss the file is the old state or the new one, never a part.
  const std::string tmp = path.string() + ".tmp";
  const std::string text = probe_state_json(state).dump() + "\n";
  std::FILE* out = std::fopen(tmp.c_str(), "w");
  if (!out)
    return make_error("cannot write the probe's state to {}: {} (check the directory exists and is writable)", tmp,
                      std::strerror(errno));
  bool written = std::fwrite(text.data(), 1, text.size(), out) == text.size() && std::fflush(out) == 0 &&
                 ::fsync(::fileno(out)) == 0;
  int saved_errno = errno;
  if (std::fclose(out) != 0 || !written)
    return make_error("cannot write the probe's state to {}: {}", tmp, std::strerror(written ? errno : saved_errno));
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return make_error("cannot write the probe's state to {}: {}", path.string(), ec.message());
  return {};
}

Result<ProbeServiceState> load_probe_state(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return ProbeServiceState{};
  auto text = read_file(path);
  if (!text) return text.error();
  json j = json::parse(*text, nullptr, false);
  if (j.is_discarded())
    return make_error("the probe's state file {} is not JSON: remove it to start new baselines", path.string());
  auto state = probe_state_from_json(j);
  if (!state)
    return make_error("the probe's state file {} is {}: remove it to start new baselines", path.string(),
                      state.error().message);
  return state;
}

}  // namespace slowburn

namespace slowburn {

namespace {
constexpr uint64_t kKeepEveryNs = 60'000'000'000;

std::string boot_id(const std::filesystem::path& proc_root) {
  auto id = read_file(proc_root / "sys/kernel/random/boot_id");
  if (!id) return "";
  std::string s = *id;
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}
}  // namespace

void ProbeStateKeeper::restore(AggregateDetector& detector, const Note& note) const {
  if (file_.empty()) return;
  const std::filesystem::path& file = file_;
  const std::filesystem::path& proc_root = proc_root_;
  auto saved = load_probe_state(file);
  if (!saved) {
    note(saved.error().message + " (not used; it is written again within a minute)");
    return;
  }
  if (saved->slow_burn.lanes.empty()) return;
  // Its pids and monotonic times are another boot's: nothing of it holds.
  if (saved->boot_id != boot_id(proc_root)) {
    note(fmt::format("the state in {} is from another boot: its baselines are not used", file.string()));
    return;
  }
  // A rank is a pid; one rank has a lane on each communicator and probe.
  std::set<int32_t> running, gone;
  AggSlowBurnState usable;
  for (AggSlowBurnLane& lane : saved->slow_burn.lanes) {
    auto dead = [&](const auto& kv) {
      // Gone, or its pid reused by another process since.
      auto saved_ticks = saved->start_ticks.find(kv.first);
      bool is_dead =
          !process_alive(proc_root, kv.first) || (saved_ticks != saved->start_ticks.end() && saved_ticks->second != 0 &&
                                                  process_start_ticks(proc_root, kv.first) != saved_ticks->second);
      (is_dead ? gone : running).insert(kv.first);
      return is_dead;
    };
    std::erase_if(lane.totals.ranks, dead);
    for (LaneSnapshot& k : lane.kept) std::erase_if(k.ranks, dead);
    std::erase_if(lane.gap_cusum, [&](const auto& kv) { return !lane.totals.ranks.contains(kv.first); });
    std::erase_if(lane.gap_alarmed_ns, [&](const auto& kv) { return !lane.totals.ranks.contains(kv.first); });
    if (!lane.totals.ranks.empty()) usable.lanes.push_back(std::move(lane));
  }
  const size_t lanes = usable.lanes.size();
  detector.restore_slow_burn(std::move(usable));
  note(fmt::format("slow-burn baselines restored from {}: {} lane(s) of {} rank(s) still running ({} gone)",
                   file.string(), lanes, running.size(), gone.size()));
}

void ProbeStateKeeper::keep(uint64_t now_ns, bool now, const AggregateDetector& detector, const Note& note) {
  if (file_.empty() || (!now && now_ns < kept_ns_ + kKeepEveryNs)) return;
  kept_ns_ = now_ns;
  ProbeServiceState state{boot_id(proc_root_), detector.slow_burn_state(), {}};
  for (const AggSlowBurnLane& lane : state.slow_burn.lanes)
    for (const auto& [pid, totals] : lane.totals.ranks)
      if (!state.start_ticks.contains(pid)) state.start_ticks[pid] = process_start_ticks(proc_root_, pid);
  auto ok = save_probe_state(file_, state);
  if (!ok && !failing_) note(ok.error().message + " (said once until a write succeeds)");
  failing_ = !ok;
}

}  // namespace slowburn
