#include "stats/log2_hist.h"

#include <gtest/gtest.h>

#include "sinks/hist_printer.h"

namespace slowburn::log2_hist_test {
namespace {

TEST(Log2Histogram, SlotsMatchTheKernelLayout) {
  EXPECT_EQ(Log2Histogram::slot_of(0, 40), 0u);
  EXPECT_EQ(Log2Histogram::slot_of(1, 40), 0u);
  EXPECT_EQ(Log2Histogram::slot_of(2, 40), 1u);
  EXPECT_EQ(Log2Histogram::slot_of(3, 40), 1u);
  EXPECT_EQ(Log2Histogram::slot_of(4, 40), 2u);
  EXPECT_EQ(Log2Histogram::slot_of(1023, 40), 9u);
  EXPECT_EQ(Log2Histogram::slot_of(1024, 40), 10u);
  EXPECT_EQ(Log2Histogram::slot_of(uint64_t{1} << 50, 40), 39u);  // clamped into the last slot
  EXPECT_EQ(Log2Histogram::slot_low(0), 0u);
  EXPECT_EQ(Log2Histogram::slot_high(0), 1u);
  EXPECT_EQ(Log2Histogram::slot_low(3), 8u);
  EXPECT_EQ(Log2Histogram::slot_high(3), 15u);
}

TEST(Log2Histogram, AddMergeCount) {
  Log2Histogram a("usecs"), b("usecs");
  a.add(5);
  a.add(6, 3);
  b.add(100);
  b.add_slot_count(45, 2);  // past the last slot: folds into it
  a.merge(b);
  EXPECT_EQ(a.count(), 7u);
  EXPECT_EQ(a.slots()[2], 4u);
  EXPECT_EQ(a.slots()[6], 1u);
  EXPECT_EQ(a.slots()[39], 2u);
}

TEST(HistPrinter, LibbpfToolsLayout) {
  Log2Histogram h("usecs");
  h.add(0);
  h.add(2, 2);
  h.add(5, 4);
  // Exactly what libbpf-tools' print_log2_hist prints for these counts.
  EXPECT_EQ(format_log2_hist(h),
            "     usecs               : count    distribution\n"
            "         0 -> 1          : 1        |**********                              |\n"
            "         2 -> 3          : 2        |********************                    |\n"
            "         4 -> 7          : 4        |****************************************|\n");
}

TEST(HistPrinter, EmptyHistogramPrintsNothing) { EXPECT_EQ(format_log2_hist(Log2Histogram("usecs")), ""); }

}  // namespace
}  // namespace slowburn::log2_hist_test
