// When a rank's own cgroup throttled it (detect/own_cpu_causes.h,
// detect/causes.h own_cpu_cause_of): spans merged as a standing cause is
// said again, a stretch covered half or more, and only an event set apart
// from peers of the rank's own process counts.
#include "detect/own_cpu_causes.h"

#include <gtest/gtest.h>

#include "detect/causes.h"

namespace slowburn::own_cpu_causes_test {
namespace {

constexpr uint64_t kS = 1'000'000'000;

TEST(OwnCpuCauses, AStandingCauseSaidEveryThirtySecondsCoversItsStretch) {
  // Said at 100 s and every 30 s to 400 s, each over the 5 s before it:
  // one span, [95 s, 400 s], reaching on to 430 s while not due again.
  OwnCpuCauses c;
  for (uint64_t t = 100; t <= 400; t += 30) c.said({7, (t - 5) * kS, t * kS});
  EXPECT_TRUE(c.over_half(7, 95 * kS, 420 * kS));
  EXPECT_TRUE(c.over_half(7, 0, 500 * kS)) << "305 s of 500: it stopped by 432 s";
  EXPECT_FALSE(c.over_half(7, 0, 700 * kS)) << "305 s of 700";
  EXPECT_FALSE(c.over_half(8, 95 * kS, 420 * kS)) << "another rank";
  c.forget(7);
  EXPECT_FALSE(c.over_half(7, 95 * kS, 420 * kS));
}

TEST(OwnCpuCauses, SaidOnceAtTheStartDoesNotCoverTheRest) {
  // Throttled while it loaded its data: said once, over [0, 5 s].
  OwnCpuCauses c;
  c.said({7, 0, 5 * kS});
  EXPECT_TRUE(c.over_half(7, 0, 15 * kS)) << "a 15 s session: its next saying is not due yet";
  EXPECT_FALSE(c.over_half(7, 0, 60 * kS)) << "not said again by 37 s: it stopped";
  EXPECT_FALSE(c.over_half(7, 0, 3600 * kS));
  EXPECT_FALSE(c.over_half(7, 600 * kS, 3600 * kS));
  // Two sayings 100 s apart are two spans, not one.
  c.said({7, 100 * kS, 105 * kS});
  EXPECT_FALSE(c.over_half(7, 0, 140 * kS));
}

TEST(OwnCpuCauses, TheWholeSessionsSayingPlacesOnlyWhatLiveSayingsDidNot) {
  // Four minutes; throttled in its first minute, said live then; at the
  // end the whole session's judgement says it again (a quarter of the
  // periods). It was not throttled over half of the session.
  RankIdentity r;
  r.pid = 7;
  r.rank = 1;
  DeviceEvent whole;
  whole.type = "host.cpu_throttled";
  whole.pid = 7;
  whole.fields = {{"pid", 7},
                  {"value", 0.25},
                  {"peers_value", 0.0},
                  {"span_ns", 240 * kS},
                  {"whole_session", true},
                  {"span_ended_before_ns", 0}};
  auto at_end = own_cpu_cause_of(whole, 240 * kS, {r}, event_names_rank);
  ASSERT_EQ(at_end.size(), 1u);
  EXPECT_TRUE(at_end[0].whole_session);
  EXPECT_EQ(at_end[0].from_ns, 180 * kS) << "a quarter of the span, as if at its end";
  EXPECT_EQ(at_end[0].to_ns, 240 * kS);

  OwnCpuCauses live;
  live.said({7, 0, 5 * kS});
  live.said({7, 25 * kS, 30 * kS});
  live.said({7, 55 * kS, 60 * kS});
  live.said(at_end[0]);
  EXPECT_FALSE(live.over_half(7, 0, 240 * kS)) << "placed by its live sayings";
  EXPECT_TRUE(live.over_half(7, 0, 100 * kS));

  // Not said live (throttled in bursts no 5 s window showed): a quarter.
  OwnCpuCauses only_at_end;
  only_at_end.said(at_end[0]);
  EXPECT_FALSE(only_at_end.over_half(7, 0, 240 * kS));
  // Throttled in 90% of the session's periods: over half of it.
  whole.fields["value"] = 0.9;
  OwnCpuCauses most;
  most.said(own_cpu_cause_of(whole, 240 * kS, {r}, event_names_rank).at(0));
  EXPECT_TRUE(most.over_half(7, 0, 240 * kS));
}

DeviceEvent throttled(int32_t pid, std::optional<double> peers, std::optional<uint64_t> span_ns) {
  DeviceEvent e;
  e.type = "host.cpu_throttled";
  e.pid = pid;
  e.fields = {{"pid", pid}, {"value", 1.0}, {"peers_value", peers ? nlohmann::json(*peers) : nlohmann::json(nullptr)}};
  if (span_ns) e.fields["span_ns"] = *span_ns;
  return e;
}

TEST(OwnCpuCauses, OnlyAThrottlingSetApartFromPeersOfTheRanksOwnProcessCounts) {
  // Two jobs on the node, both with a rank 1: the event is the process's.
  RankIdentity a, b;
  a.pid = 100;
  a.rank = 1;
  a.job = "a";
  b.pid = 200;
  b.rank = 1;
  b.job = "b";
  std::vector<RankIdentity> ranks{a, b};
  auto said = own_cpu_cause_of(throttled(200, 0.0, 5 * kS), 50 * kS, ranks, event_names_rank);
  ASSERT_EQ(said.size(), 1u);
  EXPECT_EQ(said[0].pid, 200);
  EXPECT_EQ(said[0].from_ns, 45 * kS) << "the interval judged before it";
  EXPECT_EQ(said[0].to_ns, 50 * kS);
  // The whole session's judgement of a rank gone 8 s before the end.
  DeviceEvent gone = throttled(200, 0.0, 40 * kS);
  gone.fields["span_ended_before_ns"] = 8 * kS;
  said = own_cpu_cause_of(gone, 50 * kS, ranks, event_names_rank);
  ASSERT_EQ(said.size(), 1u);
  EXPECT_EQ(said[0].from_ns, 2 * kS);
  EXPECT_EQ(said[0].to_ns, 42 * kS);
  // A rank with no peer on its node to compare is not set apart.
  EXPECT_TRUE(own_cpu_cause_of(throttled(200, std::nullopt, 5 * kS), 50 * kS, ranks, event_names_rank).empty());
  // Nor is any other event.
  DeviceEvent other = throttled(200, 0.0, 5 * kS);
  other.type = "host.cpu_contention";
  EXPECT_TRUE(own_cpu_cause_of(other, 50 * kS, ranks, event_names_rank).empty());
}

}  // namespace
}  // namespace slowburn::own_cpu_causes_test
