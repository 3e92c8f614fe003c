// The gloo offsets the catalog reads through (the tag of each collective's
// options, a context's rank and size) against the headers of the gloo that
// Debian's PyTorch links (libgloo-dev, the same source as libgloo0).
#include <gtest/gtest.h>

#include "probes/catalog.h"

#if __has_include(<gloo/allreduce.h>)
#define SLOWBURN_HAVE_GLOO_HEADERS 1
#include <gloo/allgather.h>
#include <gloo/allgatherv.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/context.h>
#include <gloo/gather.h>
#include <gloo/reduce.h>
#include <gloo/scatter.h>

#include <cstddef>
#endif

namespace slowburn::gloo_layout_test {
namespace {

#ifdef SLOWBURN_HAVE_GLOO_HEADERS
// The members are protected: a derived class may name them. offsetof on
// these non-standard-layout classes is what the compiler lays out (GCC).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
#define SB_TAG_OFFSET(Options)                                                   \
  struct Options##Probe : gloo::Options {                                        \
    static size_t tag_offset() { return offsetof(Options##Probe, tag); }         \
    static size_t context_offset() { return offsetof(Options##Probe, context); } \
  }
SB_TAG_OFFSET(AllgatherOptions);
SB_TAG_OFFSET(AllgathervOptions);
SB_TAG_OFFSET(AlltoallOptions);
SB_TAG_OFFSET(AlltoallvOptions);
SB_TAG_OFFSET(BarrierOptions);
SB_TAG_OFFSET(BroadcastOptions);
SB_TAG_OFFSET(GatherOptions);
SB_TAG_OFFSET(ReduceOptions);
SB_TAG_OFFSET(ScatterOptions);
struct AllreduceOptionsProbe : gloo::AllreduceOptions {
  static size_t tag_offset() {
    return offsetof(AllreduceOptionsProbe, impl_) + offsetof(gloo::detail::AllreduceOptionsImpl, tag);
  }
  static size_t context_offset() {
    return offsetof(AllreduceOptionsProbe, impl_) + offsetof(gloo::detail::AllreduceOptionsImpl, context);
  }
};

uint16_t catalog_tag_offset(const char* probe) {
  const ProbeSpec* spec = find_probe(probe);
  EXPECT_NE(spec, nullptr) << probe;
  return spec ? static_cast<uint16_t>(spec->seq_offset - 1) : 0;
}
#endif

TEST(GlooLayout, TheCatalogReadsTheTagWhereTheHeadersPutIt) {
#ifndef SLOWBURN_HAVE_GLOO_HEADERS
  GTEST_SKIP() << "libgloo-dev is not installed (make deps installs it): gloo's headers are needed to check offsets";
#else
  EXPECT_EQ(catalog_tag_offset("gloo.allreduce"), AllreduceOptionsProbe::tag_offset());
  EXPECT_EQ(catalog_tag_offset("gloo.allgather"), AllgatherOptionsProbe::tag_offset());
  EXPECT_EQ(catalog_tag_offset("gloo.allgatherv"), AllgathervOptionsProbe::tag_offset());
  EXPECT_EQ(catalog_tag_offset("gloo.alltoall"), AlltoallOptionsProbe::tag_offset());
  EXPECT_EQ(catalog_tag_offset("gloo.alltoallv"), AlltoallvOptionsProbe::tag_offset());
  EXPECT_EQ(catalog_tag_offset("gloo.barrier"), BarrierOptionsProbe::tag_offset());
  EXPECT_EQ(catalog_tag_offset("gloo.broadcast"), BroadcastOptionsProbe::tag_offset());
  EXPECT_EQ(catalog_tag_offset("gloo.gather"), GatherOptionsProbe::tag_offset());
  EXPECT_EQ(catalog_tag_offset("gloo.reduce"), ReduceOptionsProbe::tag_offset());
  EXPECT_EQ(catalog_tag_offset("gloo.scatter"), ScatterOptionsProbe::tag_offset());
#endif
}

TEST(GlooLayout, TheContextIsTheOptionsFirstWordAndHoldsRankThenSize) {
#ifndef SLOWBURN_HAVE_GLOO_HEADERS
  GTEST_SKIP() << "libgloo-dev is not installed (make deps installs it): gloo's headers are needed to check offsets";
#else
  // Every options object starts with its std::shared_ptr<Context>, whose first word is the pointer (libstdc++).
  EXPECT_EQ(AllreduceOptionsProbe::context_offset(), 0u);
  EXPECT_EQ(AllgatherOptionsProbe::context_offset(), 0u);
  EXPECT_EQ(BarrierOptionsProbe::context_offset(), 0u);
  EXPECT_EQ(BroadcastOptionsProbe::context_offset(), 0u);
  EXPECT_EQ(ScatterOptionsProbe::context_offset(), 0u);
  EXPECT_EQ(offsetof(gloo::Context, rank), 8u) << "comm/comm_registry.cpp reads the rank at +8";
  EXPECT_EQ(offsetof(gloo::Context, size), 12u) << "and the size at +12";
#endif
}

}  // namespace
}  // namespace slowburn::gloo_layout_test

#ifdef SLOWBURN_HAVE_GLOO_HEADERS
#pragma GCC diagnostic pop
#endif
