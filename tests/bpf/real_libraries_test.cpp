// Probes from the catalog in the real libraries of this machine: OpenMPI's
// libmpi in running ranks, NCCL and the CUDA runtime under /usr/local/cuda.
#include <gtest/gtest.h>

#include <map>

#include "core/subprocess.h"
#include "demo/mpi_job.h"
#include "events/decoder.h"
#include "loader/attach_probes.h"
#include "loader/callpair_program.h"
#include "loader/ncclib_program.h"
#include "loader/ring_buffer.h"
#include "probes/resolver.h"
#include "procfs/ranks.h"
#include "support/test_support.h"

namespace slowburn::real_libraries_test {
namespace {

using namespace std::chrono_literals;
using testing::TempDir;

const char* kCudart = "/usr/local/cuda/lib64/libcudart.so.13";
const char* kNccl = "/usr/local/cuda/lib64/libnccl.so.2";

// Attaches every resolved probe of a process; returns how many attached.
size_t attach_all(CallpairProgram& program, const std::vector<const ProbeSpec*>& probes, int32_t pid,
                  SymbolCache& cache, std::map<std::string, ProbeResolution>* seen = nullptr) {
  auto maps = read_process_maps("/proc", pid);
  EXPECT_TRUE(maps.ok());
  std::vector<ProbeResolution> resolutions;
  for (const ProbeSpec* spec : probes) {
    resolutions.push_back(resolve_in_process(*spec, "/proc", pid, *maps, cache));
    if (seen) (*seen)[spec->name] = resolutions.back();
  }
  size_t attached = 0;
  for (const ProbeStatus& status : attach_probes(program, pid, std::nullopt, resolutions)) {
    EXPECT_NE(status.state, ProbeState::failed) << status.probe << ": " << status.detail;
    attached += status.state == ProbeState::attached;
  }
  return attached;
}

TEST(RealLibraries, MpiAllreduceInTheRealLibmpiOfRunningRanks) {
  SKIP_UNLESS_ROOT();
  if (!find_program("mpirun")) GTEST_SKIP() << "mpirun not installed (apt-get install openmpi-bin)";
  TempDir dir;
  MpiJobOptions options;
  options.program = {testing::target_path("mpi_allreduce_loop").string(), (dir / "go").string(), "500"};
  options.ranks = 2;
  options.log_path = (dir / "mpirun.log").string();
  auto job = MpiJob::launch(options);
  ASSERT_TRUE(job.ok()) << job.error().message;

  auto program = CallpairProgram::load({});
  ASSERT_TRUE(program.ok()) << program.error().message;
  auto probes = select_probes({"mpi.allreduce", "mpi.barrier"});
  ASSERT_TRUE(probes.ok());
  SymbolCache cache;
  for (const RankIdentity& rank : job->ranks()) {
    std::map<std::string, ProbeResolution> seen;
    EXPECT_EQ(attach_all(**program, *probes, rank.pid, cache, &seen), 2u);
    // OpenMPI's MPI_Allreduce is a weak alias of PMPI_Allreduce: one site.
    EXPECT_EQ(seen["mpi.allreduce"].sites.size(), 1u);
    EXPECT_NE(seen["mpi.allreduce"].library.find("libmpi.so.40"), std::string::npos);
  }
  EXPECT_EQ(cache.size(), 1u);  // both ranks map the same libmpi: parsed once

  std::map<std::pair<uint32_t, uint32_t>, size_t> counts;  // (pid, probe) -> calls
  EventDecoder decoder;
  auto reader = RingBufferReader::open((*program)->events_fd(), [&](std::span<const std::byte> record) {
    if (auto call = decoder.decode_call(record)) ++counts[{call->pid, call->probe_id}];
  });
  ASSERT_TRUE(reader.ok());
  testing::touch(dir / "go");
  auto deadline = std::chrono::steady_clock::now() + 60s;
  bool all_exited = false;
  while (!all_exited && std::chrono::steady_clock::now() < deadline) {
    (void)(*reader)->poll(50);
    all_exited = true;
    for (const RankIdentity& r : job->ranks()) all_exited = all_exited && !process_alive("/proc", r.pid);
  }
  ASSERT_TRUE(all_exited) << "ranks did not finish";
  (void)(*reader)->drain();
  for (const RankIdentity& r : job->ranks()) {
    EXPECT_EQ((counts[{static_cast<uint32_t>(r.pid), find_probe("mpi.allreduce")->id}]), 500u) << "rank " << r.rank;
    EXPECT_EQ((counts[{static_cast<uint32_t>(r.pid), find_probe("mpi.barrier")->id}]), 1u) << "rank " << r.rank;
  }
  EXPECT_EQ((*program)->counters().ringbuf_drops, 0u);
}

TEST(RealLibraries, NcclAndCudaProbesResolveInTheShippedLibraries) {
  if (access(kNccl, R_OK) != 0 || access(kCudart, R_OK) != 0)
    GTEST_SKIP() << "NCCL / CUDA runtime not installed at " << kNccl << ", " << kCudart;
  SymbolCache cache;
  for (const ProbeSpec& spec : probe_catalog()) {
    const char* file = spec.name.rfind("nccl.", 0) == 0 ? kNccl : spec.name.rfind("cuda.", 0) == 0 ? kCudart : nullptr;
    if (!file) continue;
    ProbeResolution r = resolve_in_file(spec, file, cache);
    EXPECT_TRUE(r.resolved) << spec.name << ": " << r.reason;
    EXPECT_FALSE(r.sites.empty()) << spec.name;
  }
}

TEST(RealLibraries, NcclAndCudaProbesAttachAndCountRealCalls) {
  SKIP_UNLESS_ROOT();
  if (access(kNccl, R_OK) != 0 || access(kCudart, R_OK) != 0)
    GTEST_SKIP() << "NCCL / CUDA runtime not installed at " << kNccl << ", " << kCudart;
  TempDir dir;
  auto child =
      Subprocess::spawn({testing::target_path("gpu_lib_caller").string(), (dir / "go").string(), kCudart, kNccl, "100"},
                        {(dir / "out.log").string(), {}});
  ASSERT_TRUE(child.ok());
  // The caller dlopens both libraries before waiting: wait until they are mapped.
  auto deadline = std::chrono::steady_clock::now() + 10s;
  std::vector<MapEntry> maps;
  while (std::chrono::steady_clock::now() < deadline) {
    auto read = read_process_maps("/proc", child->pid());
    if (read && find_library(*read, "libnccl.so") && find_library(*read, "libcudart.so")) {
      maps = *read;
      break;
    }
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_FALSE(maps.empty()) << "gpu_lib_caller did not load the libraries";

  auto program = CallpairProgram::load({});
  ASSERT_TRUE(program.ok());
  auto probes = select_probes({"nccl.*", "cuda.*"});
  ASSERT_TRUE(probes.ok());
  SymbolCache cache;
  std::map<std::string, ProbeResolution> seen;
  // Every nccl.* and cuda.* probe resolves in the real libraries the process mapped and attaches.
  EXPECT_EQ(attach_all(**program, *probes, child->pid(), cache, &seen), probes->size());
  EXPECT_NE(seen["cuda.stream_sync"].library.find("libcudart.so.13"), std::string::npos);

  // The IB transport probes attach to the hidden ncclIb* functions of the
  // same real libnccl (this program makes no IB requests: none complete).
  auto ib = NcclIbProgram::load();
  ASSERT_TRUE(ib.ok()) << ib.error().message;
  auto ib_probes = select_probes({"nccl.ib.*"}, ProbeProgram::nccl_ib);
  ASSERT_TRUE(ib_probes.ok());
  ASSERT_EQ(ib_probes->size(), 4u);
  for (const ProbeSpec* spec : *ib_probes) {
    ProbeResolution r = resolve_in_process(*spec, "/proc", child->pid(), maps, cache);
    ASSERT_TRUE(r.resolved) << spec->name << ": " << r.reason;
    auto attached = (*ib)->attach(r, child->pid());
    EXPECT_TRUE(attached.ok()) << spec->name << ": " << attached.error().message;
  }

  std::map<uint32_t, std::vector<CallEvent>> calls;
  EventDecoder decoder;
  auto reader = RingBufferReader::open((*program)->events_fd(), [&](std::span<const std::byte> record) {
    if (auto call = decoder.decode_call(record)) calls[call->probe_id].push_back(*call);
  });
  ASSERT_TRUE(reader.ok());
  testing::touch(dir / "go");
  deadline = std::chrono::steady_clock::now() + 30s;
  while (!child->poll() && std::chrono::steady_clock::now() < deadline) (void)(*reader)->poll(50);
  ASSERT_EQ(child->poll(), 0);
  (void)(*reader)->drain();
  EXPECT_EQ(calls[find_probe("cuda.stream_sync")->id].size(), 100u);
  EXPECT_EQ(calls[find_probe("cuda.event_sync")->id].size(), 100u);
  EXPECT_EQ(calls[find_probe("nccl.group_end")->id].size(), 100u);
  const auto& allreduce = calls[find_probe("nccl.allreduce")->id];
  ASSERT_EQ(allreduce.size(), 100u);
  // The declared arguments: count 1024 elements of ncclFloat32 (7): 4 KiB.
  EXPECT_EQ(allreduce[0].size_arg, 1024u);
  EXPECT_EQ(allreduce[0].aux_arg, 7u);
  EXPECT_EQ(allreduce[0].size_arg * nccl_datatype_bytes(allreduce[0].aux_arg), 4096u);
  EXPECT_EQ((*ib)->counters().completions, 0u);
}

}  // namespace
}  // namespace slowburn::real_libraries_test
