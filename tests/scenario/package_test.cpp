// The Debian package (make deb, built by make tests): unpacked into a
// temporary root, it holds the binary in /usr/sbin, its man pages, bash
// completion, the systemd unit pointing at the packaged binary, the
// Prometheus rules and the Grafana dashboard; the packaged binary runs; its
// Depends name Debian's libraries; lintian reports no error.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "core/subprocess.h"
#include "support/test_support.h"

namespace slowburn::package_test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::read_text;
using testing::TempDir;

struct Output {
  int status = -1;
  std::string text;
};

Output run(const std::vector<std::string>& argv, std::chrono::milliseconds timeout = 120s) {
  TempDir dir;
  auto child = Subprocess::spawn(argv, {(dir / "out").string(), {}});
  if (!child.ok()) return {-1, child.error().message};
  auto status = child->wait_for(timeout);
  if (!status) child->terminate();
  return {status.value_or(-1), read_text(dir / "out")};
}

fs::path package() {
  for (const auto& entry : fs::directory_iterator(SLOWBURN_BUILD_DIR)) {
    std::string name = entry.path().filename().string();
    if (name.starts_with("slowburn_") && name.ends_with(".deb")) return entry.path();
  }
  return {};
}

TEST(Package, UnpackedItsBinaryRunsWithItsPagesUnitAndRules) {
  fs::path deb = package();
  ASSERT_FALSE(deb.empty()) << "no slowburn_*.deb in " << SLOWBURN_BUILD_DIR << " (make deb; make tests builds it)";
  TempDir root;
  Output x = run({"dpkg-deb", "-x", deb.string(), root.path().string()});
  ASSERT_EQ(x.status, 0) << x.text;
  for (const char* file :
       {"usr/sbin/slowburn", "usr/share/man/man8/slowburn.8.gz", "usr/share/man/man8/slowburn-trace.8.gz",
        "usr/share/bash-completion/completions/slowburn", "lib/systemd/system/slowburn-probe.service",
        "usr/share/slowburn/prometheus/slowburn.rules.yml", "usr/share/slowburn/grafana/slowburn-dashboard.json",
        "usr/libexec/slowburn/slowburn-mpi-workload", "usr/share/doc/slowburn/copyright"})
    EXPECT_TRUE(fs::exists(root / file)) << file;
  std::string unit = read_text(root / "lib/systemd/system/slowburn-probe.service");
  EXPECT_NE(unit.find("ExecStart=/usr/sbin/slowburn probe"), std::string::npos) << unit;
  EXPECT_EQ(unit.find("/usr/local"), std::string::npos) << "the unit runs the packaged binary";

  Output version = run({(root / "usr/sbin/slowburn").string(), "--version"});
  EXPECT_EQ(version.status, 0) << version.text;
  EXPECT_EQ(version.text.rfind("slowburn ", 0), 0u) << version.text;
  Output ranks = run({(root / "usr/sbin/slowburn").string(), "ranks", "--json", "--procfs-root",
                      std::string(SLOWBURN_SOURCE_DIR) + "/tests/fixtures/proc"});
  EXPECT_EQ(ranks.status, 0) << ranks.text;
  EXPECT_EQ(testing::json_lines(ranks.text, "rank").size(), 10u) << ranks.text;

  Output depends = run({"dpkg-deb", "-f", deb.string(), "Depends"});
  EXPECT_EQ(depends.status, 0) << depends.text;
  for (const char* library : {"libbpf1", "libelf1", "libdw1", "libfmt"})
    EXPECT_NE(depends.text.find(library), std::string::npos) << library << " in Depends: " << depends.text;
  EXPECT_EQ(depends.text.find("openmpi"), std::string::npos) << "slowburn loads no MPI: " << depends.text;
}

TEST(Package, LintianReportsNoError) {
  fs::path deb = package();
  ASSERT_FALSE(deb.empty()) << "no slowburn_*.deb in " << SLOWBURN_BUILD_DIR;
  if (!fs::exists("/usr/bin/lintian")) GTEST_SKIP() << "lintian is not installed (make deps installs it)";
  Output lintian = run({"lintian", "--fail-on", "error", "--tag-display-limit", "0", deb.string()}, 300s);
  EXPECT_EQ(lintian.status, 0) << lintian.text;
  EXPECT_FALSE(std::regex_search(lintian.text, std::regex("^E: ", std::regex::multiline))) << lintian.text;
  std::cout << (lintian.text.empty() ? "lintian: nothing to report\n" : lintian.text);
}

}  // namespace
}  // namespace slowburn::package_test
