#include "sinks/metrics_text.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include "service/metrics_endpoint.h"
#include "service/probe_metrics.h"
#include "support/temp_dir.h"

namespace slowburn::metrics_text_test {
namespace {

TEST(MetricsText, FamiliesSamplesAndEscaping) {
  MetricsText m;
  m.family("slowburn_x_total", "counter", "A help\\text\nwith a newline");
  m.sample("slowburn_x_total", {{"device", "a\"b\\c\nd"}}, 3);
  m.family("slowburn_x_total", "counter", "declared twice: ignored");
  m.sample("slowburn_x_total", {}, 0.25);
  EXPECT_EQ(m.text(),
            "# HELP slowburn_x_total A help\\\\text\\nwith a newline\n"
            "# TYPE slowburn_x_total counter\n"
            "slowburn_x_total{device=\"a\\\"b\\\\c\\nd\"} 3\n"
            "slowburn_x_total 0.25\n");
}

TEST(MetricsText, HistogramBucketsAreCumulativeWithInf) {
  MetricsText m;
  m.family("slowburn_h_seconds", "histogram", "h");
  std::vector<HistogramBucket> buckets{{0.001, 2}, {0.002, 5}};
  m.histogram("slowburn_h_seconds", {{"rank", "1"}}, buckets, 0.0075, 6);
  EXPECT_EQ(m.text(),
            "# HELP slowburn_h_seconds h\n# TYPE slowburn_h_seconds histogram\n"
            "slowburn_h_seconds_bucket{rank=\"1\",le=\"0.001\"} 2\n"
            "slowburn_h_seconds_bucket{rank=\"1\",le=\"0.002\"} 5\n"
            "slowburn_h_seconds_bucket{rank=\"1\",le=\"+Inf\"} 6\n"
            "slowburn_h_seconds_sum{rank=\"1\"} 0.0075\n"
            "slowburn_h_seconds_count{rank=\"1\"} 6\n");
}

TEST(MetricsText, ValuesAsPrometheusSpellsThem) {
  EXPECT_EQ(format_metric_value(42), "42");
  EXPECT_EQ(format_metric_value(-1), "-1");
  EXPECT_EQ(format_metric_value(0.5), "0.5");
  EXPECT_EQ(format_metric_value(1.0 / 0.0), "+Inf");
  EXPECT_EQ(format_metric_value(0.0 / 0.0), "NaN");
}

MetricsView sample_view() {
  MetricsView v;
  v.node = "node-a";
  v.version = "0.1.0";
  v.probe_names = {{1, "mpi.allreduce"}};
  RankIdentity id;
  id.pid = 4242;
  id.rank = 3;
  id.local_rank = 1;
  id.job = "job-7";
  AggStats s;
  s.tgid = 4242;
  s.probe_id = 1;
  s.calls = 10;
  s.wait_ns = 25'000'000;
  s.wait_us_slots[0] = 1;   // < 2 us
  s.wait_us_slots[11] = 9;  // 2048-4095 us
  // Its tensor-parallel group: series carry the communicator's label.
  auto tp = std::make_shared<CommunicatorInfo>();
  tp->id = 5;
  tp->label = "cid 3 (ranks 2,3)";
  tp->source = CommSource::memory;
  tp->size = 2;
  v.rank_stats.push_back({id, s, tp});
  WindowReport w;
  w.probe = "mpi.allreduce";
  w.kind = CallKind::synchronizing;
  w.comm = tp;
  RankWindowStats r;
  r.identity = id;
  r.lateness_median_ns = 2e6;
  r.gap_median_ns = 9e6;
  r.wait_mean_ns = 1e5;
  r.z_gap = 7.5;
  r.blame_share = 0.2;
  r.last_fraction = 0.9;
  w.ranks.push_back(r);
  v.windows.push_back(w);
  Finding f;
  f.culprit = id;
  f.probe = "mpi.allreduce";
  f.comm = tp;
  f.likely_cause_type = "link.downtrained";
  f.cost_share = 0.04;  // the slow burn: minor
  v.active_findings[4242] = f;
  v.findings_total[{"job-7", 3, "straggler"}] = 1;
  v.device_events_total[{"link.downtrained", "0000:3b:00.0", "gpu", "warning"}] = 2;
  v.jobs["job-7"] = {8, 4};
  v.probe_states = {{"mpi.allreduce", "throttled"}, {"nccl.allreduce", "unavailable"}};
  v.probe_calls_total["mpi.allreduce"] = 10;
  v.budget_ratio = 0.01;
  v.call_cost_ns = 10'000;
  v.toggle_cost_ns = 5e7;
  v.ringbuf_drops_total["kmsg_xid"] = 0;
  v.health = {{"memory.edac_ue", CheckState::fail, "mc0", 2, 0, {3}, "mc0: +2 uncorrected", false, ""},
              {"clock.sync", CheckState::warn, "", nullptr, 1000, {3}, "not synchronised", false, ""}};
  return v;
}

TEST(ProbeMetrics, RendersTheContract) {
  std::string text = render_metrics(sample_view());
  const std::string labels =
      "job=\"job-7\",rank=\"3\",local_rank=\"1\",node=\"node-a\",probe=\"mpi.allreduce\","
      "communicator=\"cid 3 (ranks 2,3)\",communicator_size=\"2\"";
  for (const std::string& line : {
           "slowburn_collective_latency_seconds_bucket{" + labels + ",le=\"2e-06\"} 1",
           "slowburn_collective_latency_seconds_bucket{" + labels + ",le=\"0.004096\"} 10",
           "slowburn_collective_latency_seconds_bucket{" + labels + ",le=\"+Inf\"} 10",
           "slowburn_collective_latency_seconds_sum{" + labels + "} 0.025",
           "slowburn_rank_calls_total{" + labels + "} 10",
           "slowburn_rank_lateness_seconds{" + labels + "} 0.002",
           "slowburn_rank_gap_seconds{" + labels + "} 0.009",
           "slowburn_rank_gap_z{" + labels + "} 7.5",
           "slowburn_rank_blame_ratio{" + labels + "} 0.2",
           "slowburn_straggler{" + labels + ",cause=\"link.downtrained\",where=\"arrival\",cost=\"minor\"} 1",
           std::string("slowburn_findings_total{job=\"job-7\",rank=\"3\",node=\"node-a\",type=\"straggler\"} 1"),
           std::string("slowburn_device_events_total{node=\"node-a\",type=\"link.downtrained\",device=\"0000:3b:00.0\","
                       "role=\"gpu\",severity=\"warning\"} 2"),
           std::string("slowburn_job_world_size{job=\"job-7\",node=\"node-a\"} 8"),
           std::string("slowburn_job_ranks{job=\"job-7\",node=\"node-a\"} 4"),
           std::string("slowburn_probe_state{probe=\"mpi.allreduce\",state=\"throttled\"} 1"),
           std::string("slowburn_probe_state{probe=\"mpi.allreduce\",state=\"attached\"} 0"),
           std::string("slowburn_probe_call_cost_seconds 1e-05"),
           std::string("slowburn_probe_toggle_cost_seconds 0.05"),
           std::string("slowburn_health_check{check=\"memory.edac_ue\",device=\"mc0\",state=\"fail\"} 1"),
           std::string("slowburn_health_check{check=\"memory.edac_ue\",device=\"mc0\",state=\"ok\"} 0"),
           std::string("slowburn_health_check{check=\"clock.sync\",device=\"\",state=\"warn\"} 1"),
           std::string("slowburn_health_check{check=\"clock.sync\",device=\"\",state=\"unavailable\"} 0"),
       })
    EXPECT_NE(text.find(line + "\n"), std::string::npos) << line << "\n---\n" << text;
  EXPECT_EQ(text.find("slowburn_rank_lateness_z{"), std::string::npos) << "no z without one";
}

TEST(ProbeMetrics, EachFamilyIsContiguous) {
  // The text format wants a family's samples right after its HELP and TYPE
  // (promtool does not check it; Prometheus's parser does).
  std::istringstream text(render_metrics(sample_view()));
  std::string family;
  std::set<std::string> closed;
  for (std::string line; std::getline(text, line);) {
    if (line.rfind("# TYPE ", 0) == 0) {
      if (!family.empty()) closed.insert(family);
      family = line.substr(7, line.find(' ', 7) - 7);
      EXPECT_FALSE(closed.contains(family)) << family << " declared twice";
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    std::string name = line.substr(0, line.find_first_of("{ "));
    EXPECT_EQ(name.rfind(family, 0), 0u) << name << " appears under " << family;
  }
}

TEST(ProbeMetrics, PromtoolFindsNothingToLint) {
  if (system("command -v promtool >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "promtool not installed (Debian package prometheus; make deps installs it)";
  testing::TempDir dir;
  {
    std::ofstream out(dir / "metrics.txt");
    out << render_metrics(sample_view());
  }
  std::string cmd =
      "promtool check metrics < " + (dir / "metrics.txt").string() + " > " + (dir / "lint.txt").string() + " 2>&1";
  int rc = system(cmd.c_str());
  std::ifstream lint(dir / "lint.txt");
  std::string findings((std::istreambuf_iterator<char>(lint)), {});
  EXPECT_EQ(rc, 0) << findings;
  EXPECT_EQ(findings, "");
}

TEST(ListenAddress, ParsesHostAndPort) {
  auto a = parse_listen_address("127.0.0.1:9464");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->first, "127.0.0.1");
  EXPECT_EQ(a->second, 9464);
  auto v6 = parse_listen_address("[::1]:0");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->first, "::1");
  EXPECT_EQ(v6->second, 0);
  for (const char* bad : {"9464", ":9464", "host:", "host:99999", "host:12ab"}) {
    auto r = parse_listen_address(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().message.find("--listen"), std::string::npos);
  }
}

}  // namespace
}  // namespace slowburn::metrics_text_test
