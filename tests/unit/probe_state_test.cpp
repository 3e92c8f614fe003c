// The probe service's state file (service/probe_state.h): the slow burn's
// baselines come back whole from the file, a malformed or foreign file is
// refused with a message that says what to do, and only the ranks still
// running on this boot are restored.
#include "service/probe_state.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>

#include "core/files.h"
#include "detect/aggregate_detector.h"

namespace slowburn::probe_state_test {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/slowburn-probe-state-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

// A live process in a fixture /proc, started `ticks` after boot (field 22).
void process(const fs::path& proc, int32_t pid, uint64_t ticks) {
  write(proc / std::to_string(pid) / "stat",
        fmt::format("{} (rank) S 1 {} {} 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 {} 0 0\n", pid, pid, pid, ticks));
}

LaneSnapshot snapshot(uint64_t at_ns, std::vector<int32_t> pids) {
  LaneSnapshot s;
  s.at_ns = at_ns;
  s.traced_ns = at_ns - 1000;
  s.instances = 40;
  for (int32_t pid : pids) {
    LaneRankTotals& t = s.ranks[pid];
    t.lasts = 5 + static_cast<uint64_t>(pid % 7);
    t.blame_ns = 1'000'000 * static_cast<uint64_t>(pid);
    t.inside_ns = 9'000'000;
    if (pid % 2 == 0) t.runq_ns = 12'345;
  }
  return s;
}

ProbeServiceState sample(std::vector<int32_t> pids) {
  AggSlowBurnLane lane;
  lane.job = "42";
  lane.comm_key = "mpi:42:cid=0:ranks=0-1";
  lane.probe = "mpi.allreduce";
  lane.first_ns = 1000;
  lane.totals = snapshot(600'000'000'000, pids);
  lane.kept.push_back(snapshot(540'000'000'000, pids));
  lane.points.push_back({60'000'000'000, 59'000'000'000, {{pids.front(), 777}}});
  lane.stride_ns = 60'000'000'000;
  for (int32_t pid : pids) lane.gap_cusum[pid] = 20.5 + pid % 3;
  lane.gap_alarmed_ns[pids.front()] = 530'000'000'000;
  return {"boot-a", {{lane}}, {}};
}

TEST(ProbeState, TheBaselinesComeBackWholeFromTheFile) {
  TempDir dir;
  const fs::path file = dir.path / "state.json";
  ProbeServiceState saved = sample({2000, 2001});
  saved.start_ticks = {{2000, 500}, {2001, 0}};
  ASSERT_TRUE(save_probe_state(file, saved));
  EXPECT_FALSE(fs::exists(file.string() + ".tmp")) << "the file is renamed into place";

  auto loaded = load_probe_state(file);
  ASSERT_TRUE(loaded) << loaded.error().message;
  EXPECT_EQ(loaded->boot_id, "boot-a");
  EXPECT_EQ(loaded->start_ticks, saved.start_ticks);
  ASSERT_EQ(loaded->slow_burn.lanes.size(), 1u);
  const AggSlowBurnLane& a = saved.slow_burn.lanes[0];
  const AggSlowBurnLane& b = loaded->slow_burn.lanes[0];
  EXPECT_EQ(b.job, a.job);
  EXPECT_EQ(b.comm_key, a.comm_key);
  EXPECT_EQ(b.probe, a.probe);
  EXPECT_EQ(b.first_ns, a.first_ns);
  EXPECT_EQ(b.stride_ns, a.stride_ns);
  EXPECT_EQ(b.totals.at_ns, a.totals.at_ns);
  EXPECT_EQ(b.totals.traced_ns, a.totals.traced_ns);
  EXPECT_EQ(b.totals.instances, a.totals.instances);
  ASSERT_EQ(b.totals.ranks.size(), 2u);
  for (int32_t pid : {2000, 2001}) {
    const LaneRankTotals& x = a.totals.ranks.at(pid);
    const LaneRankTotals& y = b.totals.ranks.at(pid);
    EXPECT_EQ(y.lasts, x.lasts);
    EXPECT_EQ(y.blame_ns, x.blame_ns);
    EXPECT_EQ(y.inside_ns, x.inside_ns);
    EXPECT_EQ(y.runq_ns, x.runq_ns) << "a rank without run-queue waits stays without them";
  }
  ASSERT_EQ(b.kept.size(), 1u);
  EXPECT_EQ(b.kept[0].at_ns, a.kept[0].at_ns);
  ASSERT_EQ(b.points.size(), 1u);
  EXPECT_EQ(b.points[0].own_ns, a.points[0].own_ns);
  EXPECT_EQ(b.gap_cusum, a.gap_cusum) << "a drift's evidence outlives the restart";
  EXPECT_EQ(b.gap_alarmed_ns, a.gap_alarmed_ns);
}

TEST(ProbeState, AFileWrittenBeforeTheDriftsWereKeptIsRead) {
  TempDir dir;
  const fs::path file = dir.path / "state.json";
  ASSERT_TRUE(save_probe_state(file, sample({2000})));
  nlohmann::json j = nlohmann::json::parse(*read_file(file));
  j["slow_burn"][0].erase("gap_cusum");
  j["slow_burn"][0].erase("gap_alarmed_ns");
  write(file, j.dump());
  auto loaded = load_probe_state(file);
  ASSERT_TRUE(loaded) << loaded.error().message;
  ASSERT_EQ(loaded->slow_burn.lanes.size(), 1u);
  EXPECT_TRUE(loaded->slow_burn.lanes[0].gap_cusum.empty());
  EXPECT_TRUE(loaded->slow_burn.lanes[0].gap_alarmed_ns.empty());
  EXPECT_EQ(loaded->slow_burn.lanes[0].totals.ranks.size(), 1u);
}

TEST(ProbeState, AnAbsentFileIsAFirstStartAndABadOneSaysToRemoveIt) {
  TempDir dir;
  auto absent = load_probe_state(dir.path / "none.json");
  ASSERT_TRUE(absent);
  EXPECT_TRUE(absent->slow_burn.lanes.empty());

  const fs::path file = dir.path / "state.json";
  for (const char* text : {"{not json", R"({"version": 99, "boot_id": "x", "slow_burn": []})",
                           R"({"version": 1, "boot_id": "x", "slow_burn": [{"job": "42"}]})"}) {
    write(file, text);
    auto bad = load_probe_state(file);
    ASSERT_FALSE(bad) << text;
    EXPECT_NE(bad.error().message.find(file.string()), std::string::npos) << bad.error().message;
    EXPECT_NE(bad.error().message.find("remove it"), std::string::npos) << bad.error().message;
  }
}

TEST(ProbeState, OnlyTheRanksStillRunningOnThisBootAreRestored) {
  TempDir dir;
  const fs::path proc = dir.path / "proc", file = dir.path / "state.json";
  write(proc / "sys/kernel/random/boot_id", "boot-a\n");
  // 2000 runs on; 2001 has exited; 2002's pid now names another process.
  ProbeServiceState saved = sample({2000, 2001, 2002});
  saved.start_ticks = {{2000, 500}, {2001, 501}, {2002, 502}};
  ASSERT_TRUE(save_probe_state(file, saved));
  process(proc, 2000, 500);
  process(proc, 2002, 9000);

  AggregateDetector detector(DetectorConfig{}, {});
  std::vector<std::string> notes;
  ProbeStateKeeper(file, proc).restore(detector, [&](const std::string& n) { notes.push_back(n); });
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("1 lane(s) of 1 rank(s) still running (2 gone)"), std::string::npos) << notes[0];
  AggSlowBurnState restored = detector.slow_burn_state();
  ASSERT_EQ(restored.lanes.size(), 1u);
  EXPECT_EQ(restored.lanes[0].totals.ranks.count(2000), 1u);
  EXPECT_EQ(restored.lanes[0].totals.ranks.count(2001), 0u);
  EXPECT_EQ(restored.lanes[0].totals.ranks.count(2002), 0u) << "a reused pid is not the rank";
  EXPECT_EQ(restored.lanes[0].kept.at(0).ranks.count(2001), 0u);
  EXPECT_EQ(restored.lanes[0].gap_cusum.size(), 1u) << "the gone ranks' drift statistics go with them";
  EXPECT_EQ(restored.lanes[0].gap_cusum.count(2000), 1u);
  EXPECT_EQ(restored.lanes[0].gap_alarmed_ns.count(2000), 1u);

  // After a reboot the pids and monotonic times are another boot's.
  write(proc / "sys/kernel/random/boot_id", "boot-b\n");
  AggregateDetector rebooted(DetectorConfig{}, {});
  notes.clear();
  ProbeStateKeeper(file, proc).restore(rebooted, [&](const std::string& n) { notes.push_back(n); });
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("another boot"), std::string::npos) << notes[0];
  EXPECT_TRUE(rebooted.slow_burn_state().lanes.empty());
}

TEST(ProbeState, TheFileIsWrittenOnceAMinuteAndAtExit) {
  TempDir dir;
  const fs::path proc = dir.path / "proc", file = dir.path / "state.json";
  write(proc / "sys/kernel/random/boot_id", "boot-a\n");
  AggregateDetector detector(DetectorConfig{}, {});
  ProbeStateKeeper keeper(file, proc);
  std::vector<std::string> notes;
  auto note = [&](const std::string& n) { notes.push_back(n); };
  constexpr uint64_t kS = 1'000'000'000;

  keeper.keep(100 * kS, false, detector, note);
  ASSERT_TRUE(fs::exists(file));
  auto first = load_probe_state(file);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->boot_id, "boot-a");
  fs::remove(file);
  keeper.keep(130 * kS, false, detector, note);
  EXPECT_FALSE(fs::exists(file)) << "not again within the minute";
  keeper.keep(161 * kS, false, detector, note);
  EXPECT_TRUE(fs::exists(file));
  fs::remove(file);
  keeper.keep(162 * kS, true, detector, note);
  EXPECT_TRUE(fs::exists(file)) << "at exit it is written whatever the time";
  EXPECT_TRUE(notes.empty());

  ProbeStateKeeper unwritable(dir.path / "missing-dir/state.json", proc);
  unwritable.keep(100 * kS, true, detector, note);
  unwritable.keep(200 * kS, false, detector, note);
  ASSERT_EQ(notes.size(), 1u) << "a failing write is said once";
  EXPECT_NE(notes[0].find("missing-dir"), std::string::npos) << notes[0];
  fs::create_directories(dir.path / "missing-dir");
  unwritable.keep(300 * kS, false, detector, note);
  EXPECT_TRUE(fs::exists(dir.path / "missing-dir/state.json"));
  fs::remove_all(dir.path / "missing-dir");
  unwritable.keep(400 * kS, false, detector, note);
  EXPECT_EQ(notes.size(), 2u) << "failing again after a success is said again";
}

}  // namespace
}  // namespace slowburn::probe_state_test
