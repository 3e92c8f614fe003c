#include "probes/catalog.h"

#include <gtest/gtest.h>

#include <set>

#include "loader/callpair_program.h"
#include "slowburn/callpair.h"

namespace slowburn {
namespace {

TEST(Catalog, HasTheRequiredProbes) {
  for (const char* name : {"mpi.allreduce", "mpi.barrier", "mpi.bcast", "mpi.allgather", "mpi.reduce_scatter",
                           "nccl.allreduce", "nccl.allgather", "nccl.reducescatter", "nccl.broadcast", "nccl.send",
                           "nccl.recv", "nccl.group_end", "cuda.stream_sync", "cuda.event_sync"})
    EXPECT_NE(find_probe(name), nullptr) << name;
}

TEST(Catalog, IdsAndNamesAreUniqueAndBelowTheDynamicRange) {
  std::set<uint16_t> ids;
  std::set<std::string> names;
  for (const ProbeSpec& spec : probe_catalog()) {
    EXPECT_TRUE(ids.insert(spec.id).second) << spec.name;
    EXPECT_TRUE(names.insert(spec.name).second) << spec.name;
    EXPECT_LT(spec.id, kFirstDynamicProbeId);
    EXPECT_LE(spec.size_arg, SB_MAX_ARG_INDEX);
    EXPECT_LE(spec.aux_arg, SB_MAX_ARG_INDEX);
    EXPECT_FALSE(spec.targets.empty());
    EXPECT_EQ(find_probe(spec.id), &spec);
  }
}

TEST(Catalog, MpiProbesCarryTheirPmpiAlias) {
  const ProbeSpec* spec = find_probe("mpi.allreduce");
  ASSERT_NE(spec, nullptr);
  EXPECT_EQ(spec->kind, CallKind::synchronizing);
  ASSERT_EQ(spec->targets.size(), 1u);
  EXPECT_EQ(spec->targets[0].library, "libmpi.so");
  EXPECT_EQ(spec->targets[0].symbols, (std::vector<std::string>{"MPI_Allreduce", "PMPI_Allreduce"}));
  EXPECT_EQ(spec->size_arg, 3);
}

TEST(Catalog, CudaProbesPreferTheRuntimeThenTheDriver) {
  const ProbeSpec* spec = find_probe("cuda.stream_sync");
  ASSERT_NE(spec, nullptr);
  ASSERT_EQ(spec->targets.size(), 2u);
  EXPECT_EQ(spec->targets[0].library, "libcudart.so");
  EXPECT_EQ(spec->targets[1].library, "libcuda.so");
}

TEST(SelectProbes, Patterns) {
  auto all = select_probes({});
  ASSERT_TRUE(all.ok());
  size_t callpair = 0;
  for (const ProbeSpec& spec : probe_catalog()) callpair += spec.program == ProbeProgram::callpair;
  EXPECT_EQ(all->size(), callpair);  // the default set: what the call-pair program serves
  for (const ProbeSpec* spec : *all) EXPECT_EQ(spec->program, ProbeProgram::callpair);
  auto ib = select_probes({"nccl.ib.*"}, ProbeProgram::nccl_ib);
  ASSERT_TRUE(ib.ok());
  EXPECT_EQ(ib->size(), 4u);
  EXPECT_FALSE(select_probes({"nccl.ib.test"}).ok());  // not a call-pair probe

  auto mpi = select_probes({"mpi.*"});
  ASSERT_TRUE(mpi.ok());
  for (const ProbeSpec* spec : *mpi) EXPECT_EQ(spec->name.rfind("mpi.", 0), 0u);

  auto two = select_probes({"mpi.allreduce", "nccl.send", "mpi.allreduce"});
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(two->size(), 2u);

  auto bad = select_probes({"mpi.allreduce", "nosuch.*"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("no probe matches 'nosuch.*'"), std::string::npos);
  EXPECT_NE(bad.error().message.find("mpi.allreduce"), std::string::npos);
}

TEST(Cookie, LayoutMatchesTheBpfSide) {
  uint64_t cookie = make_callpair_cookie(1234, 3, 4);
  EXPECT_EQ(cookie & SB_COOKIE_PROBE_MASK, 1234u);
  EXPECT_EQ((cookie >> SB_COOKIE_SIZE_ARG_SHIFT) & SB_COOKIE_ARG_MASK, 3u);
  EXPECT_EQ((cookie >> SB_COOKIE_AUX_ARG_SHIFT) & SB_COOKIE_ARG_MASK, 4u);
}

TEST(NcclDatatype, Bytes) {
  EXPECT_EQ(nccl_datatype_bytes(7), 4u);   // ncclFloat32
  EXPECT_EQ(nccl_datatype_bytes(9), 2u);   // ncclBfloat16
  EXPECT_EQ(nccl_datatype_bytes(8), 8u);   // ncclFloat64
  EXPECT_EQ(nccl_datatype_bytes(99), 0u);  // unknown: no guess
}

}  // namespace
}  // namespace slowburn
