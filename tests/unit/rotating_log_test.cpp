#include "sinks/rotating_log.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <ostream>

#include "support/temp_dir.h"

namespace slowburn::rotating_log_test {
namespace {

std::vector<std::string> lines_of(const std::filesystem::path& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(RotatingLog, RotatesBetweenLinesAndLosesNothing) {
  testing::TempDir dir;
  auto log = RotatingLog::open(dir.path(), 1000, 50);
  ASSERT_TRUE(log) << log.error().message;
  for (int i = 0; i < 300; ++i) ASSERT_TRUE((*log)->write_line(fmt::format("{{\"n\":{},\"pad\":\"{:40}\"}}", i, "")));
  EXPECT_GT((*log)->rotations(), 10u);
  EXPECT_EQ((*log)->lines(), 300u);
  // Oldest file first: every line once, in order, none torn.
  std::vector<std::string> all;
  for (int i = static_cast<int>((*log)->rotations()); i >= 1; --i)
    for (auto& l : lines_of(dir / fmt::format("slowburn.jsonl.{}", i))) all.push_back(l);
  for (auto& l : lines_of(dir / "slowburn.jsonl")) all.push_back(l);
  ASSERT_EQ(all.size(), 300u);
  for (int i = 0; i < 300; ++i) EXPECT_EQ(all[i].rfind(fmt::format("{{\"n\":{},", i), 0), 0u) << all[i];
  for (int i = 1; i <= static_cast<int>((*log)->rotations()); ++i)
    EXPECT_LE(std::filesystem::file_size(dir / fmt::format("slowburn.jsonl.{}", i)), 1000u);
}

TEST(RotatingLog, KeepsOnlyTheNewestFiles) {
  testing::TempDir dir;
  auto log = RotatingLog::open(dir.path(), 100, 2);
  ASSERT_TRUE(log);
  for (int i = 0; i < 50; ++i) ASSERT_TRUE((*log)->write_line(std::string(60, 'x')));
  EXPECT_TRUE(std::filesystem::exists(dir / "slowburn.jsonl.1"));
  EXPECT_TRUE(std::filesystem::exists(dir / "slowburn.jsonl.2"));
  EXPECT_FALSE(std::filesystem::exists(dir / "slowburn.jsonl.3"));
}

TEST(RotatingLog, ReopenFollowsAnExternalRotation) {
  testing::TempDir dir;
  auto log = RotatingLog::open(dir.path(), 1 << 20, 3);
  ASSERT_TRUE(log);
  ASSERT_TRUE((*log)->write_line("before"));
  std::filesystem::rename(dir / "slowburn.jsonl", dir / "moved.jsonl");  // what logrotate does
  ASSERT_TRUE((*log)->write_line("still to the moved file"));
  ASSERT_TRUE((*log)->reopen());  // SIGHUP
  ASSERT_TRUE((*log)->write_line("after"));
  EXPECT_EQ(lines_of(dir / "moved.jsonl"), (std::vector<std::string>{"before", "still to the moved file"}));
  EXPECT_EQ(lines_of(dir / "slowburn.jsonl"), std::vector<std::string>{"after"});
}

TEST(RotatingLog, StreamWritersFeedWholeLines) {
  testing::TempDir dir;
  auto log = RotatingLog::open(dir.path(), 64, 100);
  ASSERT_TRUE(log);
  LogLineBuf buf(**log);
  std::ostream out(&buf);
  for (int i = 0; i < 20; ++i) out << "{\"line\":" << i << ",\"text\":\"abcdefghijklmnop\"}" << '\n';
  out << "partial";  // not a line yet: not written
  EXPECT_EQ((*log)->lines(), 20u);
  size_t total = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) total += lines_of(entry.path()).size();
  EXPECT_EQ(total, 20u);
}

TEST(RotatingLog, AnUnwritableDirectoryIsAClearError) {
  auto log = RotatingLog::open("/proc/self/slowburn-logs", 100, 2);
  ASSERT_FALSE(log);
  EXPECT_NE(log.error().message.find("--log-dir"), std::string::npos) << log.error().message;
}

}  // namespace
}  // namespace slowburn::rotating_log_test
