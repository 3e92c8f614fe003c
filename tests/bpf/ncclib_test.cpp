// The NCCL IB request program on real uprobes, attached to a stand-in
// libnccl.so.2 whose ncclIb* functions have NCCL 2.26-2.28's exact
// signatures (tests/targets/ncclib_standin.cpp): requests posted, polled
// and completed in known numbers, sizes and delays.
#include <bpf/bpf.h>
#include <gtest/gtest.h>
#include <linux/bpf.h>
#include <unistd.h>

#include <map>

#include "core/clock.h"
#include "core/subprocess.h"
#include "loader/ncclib_program.h"
#include "loader/uprobe_multi.h"
#include "probes/resolver.h"
#include "support/test_support.h"

namespace slowburn::ncclib_test {
namespace {

using namespace std::chrono_literals;
using testing::TempDir;

struct DriverArgs {
  int sends = 10, recvs = 6, flushes = 4, polls = 5;
  long delay_us = 0;
  long base_bytes = 1000;
  int deferred_every = 3;  // every third isend finds the peer not ready
};

class Driver {
 public:
  explicit Driver(const DriverArgs& a) {
    auto child = Subprocess::spawn({testing::target_path("ncclib_driver").string(), (dir_ / "go").string(),
                                    std::to_string(a.sends), std::to_string(a.recvs), std::to_string(a.flushes),
                                    std::to_string(a.polls), std::to_string(a.delay_us), std::to_string(a.base_bytes),
                                    std::to_string(a.deferred_every)});
    EXPECT_TRUE(child.ok()) << child.error().message;
    if (child) process_.emplace(std::move(*child));
  }
  pid_t pid() const { return process_->pid(); }
  // Starts the requests and waits for the driver to finish them.
  void run_to_exit() {
    testing::touch(dir_ / "go");
    auto status = process_->wait_for(60s);
    ASSERT_TRUE(status.has_value()) << "driver did not finish";
    EXPECT_EQ(*status, 0);
  }

 private:
  TempDir dir_;
  std::optional<Subprocess> process_;
};

// Resolves the named nccl.ib.* probes in the driver (its libnccl.so.2 is
// the stand-in, found through /proc/PID/maps) and attaches them.
void attach(NcclIbProgram& program, pid_t pid, std::initializer_list<const char*> names) {
  auto maps = read_process_maps("/proc", pid);
  ASSERT_TRUE(maps.ok()) << maps.error().message;
  SymbolCache cache;
  for (const char* name : names) {
    ProbeResolution r = resolve_in_process(*find_probe(name), "/proc", pid, *maps, cache);
    ASSERT_TRUE(r.resolved) << name << ": " << r.reason;
    ASSERT_NE(r.library.find("ncclib/libnccl.so.2"), std::string::npos) << r.library;
    auto ok = program.attach(r, pid);
    ASSERT_TRUE(ok.ok()) << name << ": " << ok.error().message;
  }
}

std::map<std::pair<IbDirection, uint64_t>, IbConnectionStats> by_connection(const std::vector<IbConnectionStats>& all,
                                                                            pid_t pid) {
  std::map<std::pair<IbDirection, uint64_t>, IbConnectionStats> out;
  for (const IbConnectionStats& s : all) {
    EXPECT_EQ(s.tgid, static_cast<uint32_t>(pid));
    out.emplace(std::make_pair(s.direction, s.comm), s);
  }
  return out;
}

class NcclIbModes : public ::testing::TestWithParam<AttachMode> {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (CAP_BPF, CAP_PERFMON) to load BPF programs";
    if (GetParam() == AttachMode::multi_link && !kernel_has_uprobe_multi())
      GTEST_SKIP() << "kernel lacks multi-uprobe links with PID filtering (Linux 6.10+)";
  }
};

TEST_P(NcclIbModes, ExactRequestsBytesPerConnectionAndDirection) {
  DriverArgs args;
  args.delay_us = 2000;
  Driver driver(args);
  auto program = NcclIbProgram::load(GetParam());
  ASSERT_TRUE(program.ok()) << program.error().message;
  attach(**program, driver.pid(), {"nccl.ib.isend", "nccl.ib.irecv", "nccl.ib.iflush", "nccl.ib.test"});
  uint64_t before_ns = monotonic_ns();
  driver.run_to_exit();
  uint64_t span_ns = monotonic_ns() - before_ns;

  auto stats = (*program)->stats();
  auto connections = by_connection(stats, driver.pid());
  // Two send connections (even and odd requests), one receive connection
  // that also flushes: four (direction, comm) entries.
  ASSERT_EQ(connections.size(), 4u);
  std::map<IbDirection, std::vector<uint64_t>> bytes_by_direction;  // sorted per direction
  uint64_t requests = 0;
  for (const auto& [key, s] : connections) {
    bytes_by_direction[key.first].push_back(s.bytes);
    requests += s.requests;
    EXPECT_EQ(s.latency.count(), s.requests);
    EXPECT_EQ(s.size.count(), s.requests);
    // Every request completes no earlier than the injected delay, and within
    // the span the test measured around the driver (the same clock).
    EXPECT_GE(s.total_ns, s.requests * 2'000'000) << ib_direction_name(key.first);
    EXPECT_LE(s.total_ns, s.requests * span_ns) << ib_direction_name(key.first);
    for (size_t slot = 0; slot < Log2Histogram::slot_of(2000, 32); ++slot)
      EXPECT_EQ(s.latency.slots()[slot], 0u) << "a latency below 2000 us in slot " << slot;
  }
  EXPECT_EQ(requests, 20u);
  std::sort(bytes_by_direction[IbDirection::send].begin(), bytes_by_direction[IbDirection::send].end());
  // isend i carries 1000 * (i + 1) bytes: even i on one comm, odd on the other.
  EXPECT_EQ(bytes_by_direction[IbDirection::send], (std::vector<uint64_t>{25000, 30000}));
  // irecv: two buffers of 1000 and 2000 bytes, six times, into which half of
  // that arrives (what ncclIbTest reports, not the posted capacity); iflush:
  // 4 bytes, four times.
  EXPECT_EQ(bytes_by_direction[IbDirection::recv], (std::vector<uint64_t>{9000}));
  EXPECT_EQ(bytes_by_direction[IbDirection::flush], (std::vector<uint64_t>{16}));

  IbCounters counters = (*program)->counters();
  EXPECT_EQ(counters.posts, 20u);
  EXPECT_EQ(counters.completions, 20u);
  EXPECT_EQ(counters.posts_deferred, 4u);  // isend calls 3, 6, 9, 12 returned a NULL request
  EXPECT_EQ(counters.unknown_done, 0u);
  EXPECT_EQ(counters.table_full, 0u);
  EXPECT_EQ(counters.stats_full, 0u);
  EXPECT_EQ(counters.slot_clashes, 0u);
  // The delay keeps each request polling far more than its five scripted
  // not-done answers.
  EXPECT_GE(counters.polls, 20u * 6);
}

TEST_P(NcclIbModes, EveryPollIsCountedInTheKernelOnly) {
  DriverArgs args;  // no delay: each request answers "not done" 5 times, then done
  Driver driver(args);
  auto program = NcclIbProgram::load(GetParam());
  ASSERT_TRUE(program.ok()) << program.error().message;
  attach(**program, driver.pid(), {"nccl.ib.isend", "nccl.ib.irecv", "nccl.ib.iflush", "nccl.ib.test"});
  driver.run_to_exit();

  IbCounters counters = (*program)->counters();
  EXPECT_EQ(counters.polls, 20u * 6);
  EXPECT_EQ(counters.completions, 20u);
  // The program has no ring buffer or perf buffer at all: nothing per poll
  // (or per request) can wake user space.
  for (uint32_t id : testing::bpf_program_ids_named("ib_test_return")) {
    int fd = bpf_prog_get_fd_by_id(id);
    ASSERT_GE(fd, 0);
    uint32_t map_ids[16] = {};
    bpf_prog_info info{};
    info.nr_map_ids = 16;
    info.map_ids = reinterpret_cast<uint64_t>(map_ids);
    uint32_t len = sizeof(info);
    ASSERT_EQ(bpf_obj_get_info_by_fd(fd, &info, &len), 0);
    close(fd);
    for (uint32_t i = 0; i < info.nr_map_ids && i < 16; ++i) {
      int map_fd = bpf_map_get_fd_by_id(map_ids[i]);
      ASSERT_GE(map_fd, 0);
      bpf_map_info map_info{};
      uint32_t map_len = sizeof(map_info);
      ASSERT_EQ(bpf_obj_get_info_by_fd(map_fd, &map_info, &map_len), 0);
      close(map_fd);
      EXPECT_NE(map_info.type, BPF_MAP_TYPE_RINGBUF) << map_info.name;
      EXPECT_NE(map_info.type, BPF_MAP_TYPE_PERF_EVENT_ARRAY) << map_info.name;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AttachModes, NcclIbModes, ::testing::Values(AttachMode::multi_link, AttachMode::perf_link),
                         [](const auto& info) {
                           return std::string(info.param == AttachMode::multi_link ? "MultiLink" : "PerfLink");
                         });

TEST(NcclIb, CompletionsOfPostsNotSeenAreCountedNotTimed) {
  SKIP_UNLESS_ROOT();
  // Attached to ncclIbTest only, as when slowburn attaches to a job with
  // requests already in flight: no post times, so no latencies.
  Driver driver(DriverArgs{});
  auto program = NcclIbProgram::load();
  ASSERT_TRUE(program.ok()) << program.error().message;
  attach(**program, driver.pid(), {"nccl.ib.test"});
  driver.run_to_exit();
  EXPECT_TRUE((*program)->stats().empty());
  IbCounters counters = (*program)->counters();
  EXPECT_EQ(counters.unknown_done, 20u);
  EXPECT_EQ(counters.completions, 0u);
  EXPECT_EQ(counters.polls, 20u * 6);
}

TEST(NcclIb, AProbeOfAnotherProgramIsRefused) {
  SKIP_UNLESS_ROOT();
  auto program = NcclIbProgram::load();
  ASSERT_TRUE(program.ok()) << program.error().message;
  ProbeResolution r;
  r.spec = find_probe("nccl.allreduce");
  auto ok = (*program)->attach(r, 1);
  ASSERT_FALSE(ok.ok());
  EXPECT_NE(ok.error().message.find("nccl.allreduce is not an NCCL IB probe"), std::string::npos);
}

}  // namespace
}  // namespace slowburn::ncclib_test
