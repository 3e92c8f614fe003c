#include "probes/catalog.h"

#include <gtest/gtest.h>

#include <set>

#include "loader/callpair_program.h"
#include "probes/cookie.h"
#include "slowburn/callpair.h"

namespace slowburn::catalog_test {
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
  // Open MPI, Intel MPI and MVAPICH (libmpi.so), MPICH, Cray MPICH: one ABI of names.
  ASSERT_EQ(spec->targets.size(), 3u);
  EXPECT_EQ(spec->targets[0].library, "libmpi.so");
  EXPECT_EQ(spec->targets[1].library, "libmpich.so");
  EXPECT_EQ(spec->targets[2].library, "libmpi_cray.so");
  for (const ProbeTarget& t : spec->targets)
    EXPECT_EQ(t.symbols, (std::vector<std::string>{"MPI_Allreduce", "PMPI_Allreduce"}));
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
  uint64_t cookie = make_cookie(CookieFields{.probe_id = 1234, .size_arg = 3, .aux_arg = 4});
  EXPECT_EQ(cookie & SB_COOKIE_PROBE_MASK, 1234u);
  EXPECT_EQ((cookie >> SB_COOKIE_SIZE_ARG_SHIFT) & SB_COOKIE_ARG_MASK, 3u);
  EXPECT_EQ((cookie >> SB_COOKIE_AUX_ARG_SHIFT) & SB_COOKIE_ARG_MASK, 4u);
}

TEST(Cookie, EveryFieldRoundTripsWithoutTouchingTheOthers) {
  CookieFields all{.probe_id = 0xffff,
                   .size_arg = 15,
                   .aux_arg = 15,
                   .synchronizing = true,
                   .comm_arg = 15,
                   .comm_deref = true,
                   .out_arg = 15,
                   .seq_offset = 0xfff,
                   .key = 3};
  uint64_t cookie = make_cookie(all);
  EXPECT_EQ(cookie >> 48, 0u) << "reserved bits must stay zero";
  CookieFields back = parse_cookie(cookie);
  EXPECT_EQ(back.probe_id, 0xffff);
  EXPECT_EQ(back.size_arg, 15);
  EXPECT_EQ(back.aux_arg, 15);
  EXPECT_TRUE(back.synchronizing);
  EXPECT_EQ(back.comm_arg, 15);
  EXPECT_TRUE(back.comm_deref);
  EXPECT_EQ(back.out_arg, 15);
  EXPECT_EQ(back.seq_offset, 0xfff);
  EXPECT_EQ(back.key, 3);
  // One field at a time: nothing leaks into a neighbour.
  CookieFields one{.comm_arg = 7};
  CookieFields parsed = parse_cookie(make_cookie(one));
  EXPECT_EQ(parsed.comm_arg, 7);
  EXPECT_EQ(parsed.aux_arg, 0);
  EXPECT_EQ(parsed.out_arg, 0);
  EXPECT_FALSE(parsed.synchronizing);
  EXPECT_FALSE(parsed.comm_deref);
}

TEST(Cookie, CatalogProbesSayWhereTheirCommunicatorIs) {
  // MPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm): the 7th, on the stack.
  CookieFields allgather = parse_cookie(probe_cookie(*find_probe("mpi.allgather")));
  EXPECT_EQ(allgather.comm_arg, 7);
  EXPECT_TRUE(allgather.synchronizing);
  // MPI_Comm_split(comm, color, key, newcomm*): parent, color, key, and the new handle at return.
  CookieFields split = parse_cookie(probe_cookie(*find_probe("mpi.comm_split")));
  EXPECT_EQ(split.comm_arg, 1);
  EXPECT_EQ(split.aux_arg, 2);
  EXPECT_EQ(split.size_arg, 3);
  EXPECT_EQ(split.out_arg, 4);
  // gloo: the options object's first member is the context's shared_ptr.
  CookieFields gloo = parse_cookie(probe_cookie(*find_probe("gloo.allreduce")));
  EXPECT_EQ(gloo.comm_arg, 1);
  EXPECT_TRUE(gloo.comm_deref);
  EXPECT_EQ(gloo.seq_offset, 128 + 1);
  // ncclCommInitRank(comm*, nranks, id by value, rank): the id hashed from the stack, rank in the 3rd register.
  CookieFields init = parse_cookie(probe_cookie(*find_probe("nccl.comm_init_rank")));
  EXPECT_EQ(init.key, SB_COOKIE_KEY_NCCL_UNIQUE_ID);
  EXPECT_EQ(init.out_arg, 1);
  EXPECT_EQ(init.aux_arg, 3);
  EXPECT_EQ(init.size_arg, 2);
  // ncclAllReduce(send, recv, count, datatype, op, comm, stream)
  EXPECT_EQ(parse_cookie(probe_cookie(*find_probe("nccl.allreduce"))).comm_arg, 6);
}

TEST(NcclDatatype, Bytes) {
  EXPECT_EQ(nccl_datatype_bytes(7), 4u);   // ncclFloat32
  EXPECT_EQ(nccl_datatype_bytes(9), 2u);   // ncclBfloat16
  EXPECT_EQ(nccl_datatype_bytes(8), 8u);   // ncclFloat64
  EXPECT_EQ(nccl_datatype_bytes(99), 0u);  // unknown: no guess
}

}  // namespace
}  // namespace slowburn::catalog_test
