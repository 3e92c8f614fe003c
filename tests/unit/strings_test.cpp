// The nearest command or name to a mistyped one (core/strings.h).
#include "core/strings.h"

#include <gtest/gtest.h>

namespace slowburn::strings_test {
namespace {

TEST(ClosestMatch, ATypoFindsItsWordAndNonsenseFindsNothing) {
  std::vector<std::string> commands = {"trace", "catalog", "probes", "probe", "ranks", "health"};
  EXPECT_EQ(closest_match("tracee", commands), "trace");
  EXPECT_EQ(closest_match("catalgo", commands), "catalog");
  EXPECT_EQ(closest_match("helth", commands), "health");
  EXPECT_EQ(closest_match("prob", commands), "probe");  // the nearer of probe and probes
  EXPECT_EQ(closest_match("kubernetes", commands), std::nullopt);
  EXPECT_EQ(closest_match("x", {}), std::nullopt);
}

}  // namespace
}  // namespace slowburn::strings_test
