// The shipped Prometheus rules (deploy/prometheus): promtool's own checks
// and unit tests, and the contract between them and the service: every
// slowburn_ metric the rules and the dashboard read is one the service exports.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>

#include "core/files.h"
#include "service/probe_metrics.h"
#include "support/temp_dir.h"

namespace slowburn::fleet_rules_test {
namespace {

const std::string kDeploy = std::string(SLOWBURN_SOURCE_DIR) + "/deploy";

// A file the test needs, through the project's reader: a missing one fails the test.
std::string text_of(const std::string& path) {
  auto text = read_file(path);
  EXPECT_TRUE(text.ok()) << text.error().message;
  return text ? *text : std::string();
}

// Runs a command; its exit status and output.
std::pair<int, std::string> run(const std::string& cmd) {
  testing::TempDir dir;
  int rc = system((cmd + " > " + (dir / "out").string() + " 2>&1").c_str());
  return {WEXITSTATUS(rc), text_of((dir / "out").string())};
}

#define SKIP_UNLESS_PROMTOOL()                       \
  if (system("command -v promtool >/dev/null 2>&1")) \
  GTEST_SKIP() << "promtool not installed (Debian package prometheus; make deps installs it)"

TEST(FleetRules, PromtoolChecksTheRulesAndTheExampleConfig) {
  SKIP_UNLESS_PROMTOOL();
  auto [rc, out] = run("promtool check rules " + kDeploy + "/prometheus/slowburn.rules.yml");
  EXPECT_EQ(rc, 0) << out;
  std::tie(rc, out) = run("promtool check config " + kDeploy + "/prometheus/prometheus.example.yml");
  EXPECT_EQ(rc, 0) << out;
}

TEST(FleetRules, PromtoolUnitTestsPass) {
  SKIP_UNLESS_PROMTOOL();
  auto [rc, out] = run("cd " + kDeploy + "/prometheus && promtool test rules slowburn.rules.test.yml");
  EXPECT_EQ(rc, 0) << out;
}

TEST(FleetRules, EveryMetricTheyReadIsExported) {
  // Everything the service can export, from a view with every kind of series.
  MetricsView v;
  v.node = "n";
  std::string exported = render_metrics(v);
  std::set<std::string> families;
  std::regex type_line("# TYPE (\\w+) (\\w+)");
  for (std::sregex_iterator it(exported.begin(), exported.end(), type_line), end; it != end; ++it) {
    families.insert((*it)[1]);
    if ((*it)[2] == "histogram")
      for (const char* suffix : {"_bucket", "_sum", "_count"}) families.insert((*it)[1].str() + suffix);
  }
  std::regex metric("\\bslowburn_[a-z_]+");
  for (const std::string file :
       {"/prometheus/slowburn.rules.yml", "/prometheus/slowburn.rules.test.yml", "/grafana/slowburn-dashboard.json"}) {
    std::string text = text_of(kDeploy + file);
    ASSERT_FALSE(text.empty()) << file;
    std::set<std::string> unknown;
    for (std::sregex_iterator it(text.begin(), text.end(), metric), end; it != end; ++it) {
      // Recording rules (level:metric:operation) match on their metric part.
      if (!families.contains(it->str())) unknown.insert(it->str());
    }
    EXPECT_TRUE(unknown.empty()) << file << " reads metrics the service does not export: " << [&] {
      std::string s;
      for (const auto& n : unknown) s += n + " ";
      return s;
    }();
  }
}

}  // namespace
}  // namespace slowburn::fleet_rules_test
