// The verbs control-path program on real uprobes: a stand-in libibverbs
// (tests/targets/verbs_standin.c, the real signatures and structs) driven
// through a scripted QP lifecycle, and the probes attached to the real
// libibverbs.so.1 of a running process.
#include "loader/verbs_program.h"

#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include "core/clock.h"
#include "core/subprocess.h"
#include "events/decoder.h"
#include "loader/ring_buffer.h"
#include "loader/uprobe_multi.h"
#include "probes/resolver.h"
#include "rdma/qp_inventory.h"
#include "rdma/verbs_names.h"
#include "sources/rdma_sources.h"
#include "support/test_support.h"
#include "symbols/elf_symbols.h"

namespace slowburn::verbs_program_test {
namespace {

using namespace std::chrono_literals;
using testing::TempDir;

const char* kVerbsProbes[] = {"verbs.create_qp", "verbs.modify_qp", "verbs.destroy_qp", "verbs.async_event"};

std::vector<ProbeResolution> resolve_verbs(pid_t pid, SymbolCache& cache) {
  auto maps = read_process_maps("/proc", pid);
  EXPECT_TRUE(maps.ok());
  std::vector<ProbeResolution> out;
  for (const char* name : kVerbsProbes)
    out.push_back(resolve_in_process(*find_probe(name), "/proc", pid, *maps, cache));
  return out;
}

class VerbsModes : public ::testing::TestWithParam<AttachMode> {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (CAP_BPF, CAP_PERFMON) to load BPF programs";
    if (GetParam() == AttachMode::multi_link && !kernel_has_uprobe_multi())
      GTEST_SKIP() << "kernel lacks multi-uprobe links with PID filtering (Linux 6.10+)";
  }
};

TEST_P(VerbsModes, QpLifecycleTransitionsAndAsyncEvents) {
  TempDir dir;
  auto child = Subprocess::spawn({testing::target_path("verbs_driver").string(), (dir / "go").string()});
  ASSERT_TRUE(child.ok()) << child.error().message;
  auto program = VerbsProgram::load(GetParam());
  ASSERT_TRUE(program.ok()) << program.error().message;
  SymbolCache cache;
  for (const ProbeResolution& r : resolve_verbs(child->pid(), cache)) {
    ASSERT_TRUE(r.resolved) << r.spec->name << ": " << r.reason;
    ASSERT_NE(r.library.find("verbs/libibverbs.so.1"), std::string::npos) << r.library;
    auto ok = (*program)->attach(r, child->pid());
    ASSERT_TRUE(ok.ok()) << r.spec->name << ": " << ok.error().message;
  }

  std::vector<VerbsCall> calls;
  EventDecoder decoder;
  auto reader = RingBufferReader::open((*program)->events_fd(), [&](std::span<const std::byte> record) {
    if (auto call = decoder.decode_verbs(record)) calls.push_back(*call);
  });
  ASSERT_TRUE(reader.ok());
  testing::touch(dir / "go");
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (!child->poll() && std::chrono::steady_clock::now() < deadline) (void)(*reader)->poll(50);
  ASSERT_EQ(child->poll(), 0) << "the driver's scripted calls did not go as planned";
  (void)(*reader)->drain();

  // 3 creates (one refused), 4 + 2 modifies (one refused), 4 async calls
  // (the last finds nothing), 2 destroys: one record each, in order.
  ASSERT_EQ(calls.size(), 15u);
  EXPECT_EQ(decoder.stats().rejected(), 0u);
  EXPECT_EQ((*program)->counters().records, 15u);
  EXPECT_EQ((*program)->counters().ringbuf_drops, 0u);
  for (const VerbsCall& c : calls) {
    EXPECT_EQ(c.pid, static_cast<uint32_t>(child->pid()));
    if (c.kind != VerbsCallKind::create_qp || c.result == 0) {
      EXPECT_EQ(c.device, "mlx5_7");
    }
  }
  const VerbsCall& create_a = calls[0];
  EXPECT_EQ(create_a.kind, VerbsCallKind::create_qp);
  EXPECT_EQ(create_a.qp_type, static_cast<uint32_t>(IBV_QPT_RC));
  EXPECT_EQ(create_a.qp_num, 0x101u);
  EXPECT_EQ(calls[1].qp_num, 0x102u);
  EXPECT_EQ(calls[2].result, -1);  // RAW_PACKET refused
  EXPECT_EQ(calls[2].object, 0u);

  const VerbsCall& rtr = calls[4];
  EXPECT_EQ(rtr.kind, VerbsCallKind::modify_qp);
  EXPECT_EQ(rtr.old_state, IBV_QPS_INIT);
  EXPECT_EQ(rtr.new_state, IBV_QPS_RTR);
  EXPECT_EQ(rtr.dest_qp_num, 0x2222u);
  EXPECT_EQ(rtr.dest_lid, 7);
  EXPECT_EQ(format_gid(rtr.dest_gid), "fe80:0000:0000:0000:0000:0000:0000:0007");
  EXPECT_EQ(calls[6].new_state, IBV_QPS_ERR);
  EXPECT_EQ(calls[6].old_state, IBV_QPS_RTS);
  EXPECT_EQ(calls[8].new_state, IBV_QPS_RTS);
  EXPECT_EQ(calls[8].result, EINVAL);
  EXPECT_EQ(calls[8].dest_lid, 9);
  EXPECT_TRUE(gid_is_zero(calls[8].dest_gid)) << "a GRH without is_global read as a GID";

  EXPECT_EQ(calls[9].event_type, static_cast<uint32_t>(IBV_EVENT_QP_FATAL));
  EXPECT_EQ(calls[9].qp_num, 0x101u);
  EXPECT_EQ(calls[9].object, create_a.object);
  EXPECT_EQ(calls[10].event_type, static_cast<uint32_t>(IBV_EVENT_PORT_ERR));
  EXPECT_EQ(calls[10].port_num, 1u);
  EXPECT_EQ(calls[11].event_type, static_cast<uint32_t>(IBV_EVENT_DEVICE_FATAL));
  EXPECT_EQ(calls[12].result, -1);  // nothing pending
  EXPECT_EQ(calls[13].kind, VerbsCallKind::destroy_qp);
  EXPECT_EQ(calls[13].qp_num, 0x101u);  // read before the QP was freed

  // The inventory turns them into the events a person needs.
  QpInventory inventory;
  std::vector<std::string> events;
  for (const VerbsCall& c : calls)
    for (const QpEvent& e : inventory.apply(c)) events.push_back(e.type + " " + e.summary);
  std::string pid = std::to_string(child->pid());
  EXPECT_EQ(
      events,
      (std::vector<std::string>{
          "qp.create_failed pid " + pid + ": ibv_create_qp returned NULL",
          "qp.error pid " + pid + " mlx5_7: QP 0x101 moved RTS -> ERR (requested by the process)",
          "qp.modify_failed pid " + pid + " mlx5_7: QP 0x102 INIT -> RTS failed (error 22)",
          "rdma.async pid " + pid + " mlx5_7: QP_FATAL on QP 0x101: " + async_event_info(IBV_EVENT_QP_FATAL).meaning,
          "rdma.async pid " + pid + " mlx5_7: PORT_ERR on port 1: " + async_event_info(IBV_EVENT_PORT_ERR).meaning,
          "rdma.async pid " + pid + " mlx5_7: DEVICE_FATAL: " + async_event_info(IBV_EVENT_DEVICE_FATAL).meaning,
      }));
  EXPECT_TRUE(inventory.qps().empty());
  EXPECT_EQ(inventory.totals().at(child->pid()).created, 2u);
  EXPECT_EQ(inventory.totals().at(child->pid()).destroyed, 2u);
}

INSTANTIATE_TEST_SUITE_P(AttachModes, VerbsModes, ::testing::Values(AttachMode::multi_link, AttachMode::perf_link),
                         [](const auto& info) {
                           return std::string(info.param == AttachMode::multi_link ? "MultiLink" : "PerfLink");
                         });

TEST(VerbsProgram, AttachesToTheRealLibibverbsAtTheDefaultSymbolVersions) {
  SKIP_UNLESS_ROOT();
  TempDir dir;
  auto child = Subprocess::spawn({testing::target_path("verbs_real_caller").string(), (dir / "go").string()});
  ASSERT_TRUE(child.ok()) << child.error().message;
  // It maps libibverbs at start (linked, not dlopened): wait for the mapping.
  std::vector<ProbeResolution> resolutions;
  SymbolCache cache;
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    auto maps = read_process_maps("/proc", child->pid());
    if (maps && find_library(*maps, "libibverbs.so")) break;
    std::this_thread::sleep_for(10ms);
  }
  auto program = VerbsProgram::load();
  ASSERT_TRUE(program.ok()) << program.error().message;
  for (const ProbeResolution& r : resolve_verbs(child->pid(), cache)) {
    ASSERT_TRUE(r.resolved) << r.spec->name << ": " << r.reason;
    ASSERT_NE(r.library.find("libibverbs.so.1"), std::string::npos) << r.library;
    EXPECT_EQ(r.library.find("tests/targets"), std::string::npos) << "resolved the stand-in: " << r.library;
    // ibv_modify_qp@IBVERBS_1.0 takes the old struct layout: only the
    // default IBVERBS_1.1 version is a site.
    ASSERT_EQ(r.sites.size(), 1u) << r.spec->name;
    auto symbols = cache.get(r.attach_path);
    ASSERT_TRUE(symbols.ok());
    bool is_default = false;
    for (const ElfSymbol& s : (*symbols)->lookup(r.spec->targets[0].symbols[0]))
      if (s.address == r.sites[0].address) is_default = !s.hidden_version;
    EXPECT_TRUE(is_default) << r.spec->name << " attached to a compat version";
    auto ok = (*program)->attach(r, child->pid());
    ASSERT_TRUE(ok.ok()) << r.spec->name << ": " << ok.error().message;
  }
  EXPECT_GE((*program)->link_count(), 2u);
  testing::touch(dir / "go");
  EXPECT_EQ(child->wait_for(10s), 0);
  EXPECT_EQ((*program)->counters().records, 0u);  // no device: no QP calls
}

TEST(VerbsProgram, AProbeOfAnotherProgramIsRefused) {
  SKIP_UNLESS_ROOT();
  auto program = VerbsProgram::load();
  ASSERT_TRUE(program.ok()) << program.error().message;
  ProbeResolution r;
  r.spec = find_probe("verbs.reg_mr");
  auto ok = (*program)->attach(r, 1);
  ASSERT_FALSE(ok.ok());
  EXPECT_NE(ok.error().message.find("verbs.reg_mr is not a verbs control-path probe"), std::string::npos);
}

TEST(VerbsDataPath, ASlowQpIsFoundThroughTheContextsOpsAndNamed) {
  // The provider's post_send and poll_cq are static in a stripped library
  // (tests/targets/verbs_provider_standin.c), reached only through the
  // inline ibv_post_send / ibv_poll_cq: the session finds them from the
  // first QP the control path sees, and times every QP's sends. Six QPs,
  // one completing in 12 ms where the others take 200 us.
  SKIP_UNLESS_ROOT();
  TempDir dir;
  auto child =
      Subprocess::spawn({testing::target_path("verbs_qp_driver").string(), (dir / "go").string(), "6", "3", "4"});
  ASSERT_TRUE(child.ok()) << child.error().message;
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    auto maps = read_process_maps("/proc", child->pid());
    if (maps && find_library(*maps, "libibverbs.so")) break;
    std::this_thread::sleep_for(10ms);
  }
  RankIdentity rank;
  rank.pid = child->pid();
  rank.rank = 3;
  SymbolCache cache;
  auto sources = RdmaSources::start({rank}, "/proc", cache, nullptr);
  ASSERT_TRUE(sources.ok()) << sources.error().message;
  std::unique_ptr<RingBufferReader> reader;
  auto added = (*sources)->add_to([&](int fd, RingBufferReader::Handler handler) -> Result<void> {
    auto opened = RingBufferReader::open(fd, std::move(handler));
    if (!opened) return opened.error();
    reader = std::move(*opened);
    return {};
  });
  ASSERT_TRUE(added.ok()) << added.error().message;
  ASSERT_TRUE(reader);
  testing::touch(dir / "go");

  std::vector<DeviceEvent> events;
  std::vector<ProbeStatus> statuses;
  deadline = std::chrono::steady_clock::now() + 60s;
  while (!child->poll() && std::chrono::steady_clock::now() < deadline) {
    (void)reader->poll(50);
    for (DeviceEvent& e : (*sources)->poll(monotonic_ns())) events.push_back(std::move(e));
    for (ProbeStatus& s : (*sources)->take_new_statuses()) statuses.push_back(std::move(s));
  }
  ASSERT_EQ(child->poll(), 0) << "the driver's data path did not go as planned";
  (void)reader->drain();
  for (DeviceEvent& e : (*sources)->poll(monotonic_ns(), true)) events.push_back(std::move(e));

  ASSERT_EQ(statuses.size(), 1u) << "attached once, at the first QP";
  EXPECT_EQ(statuses[0].probe, "verbs.qp_completions");
  EXPECT_EQ(statuses[0].state, ProbeState::attached) << statuses[0].detail;
  EXPECT_NE(statuses[0].library.find("libsbprov-rdmav34.so"), std::string::npos) << statuses[0].library;

  std::map<std::string, HistogramReport> by_qp;
  for (const HistogramReport& h : (*sources)->ib_histograms()) by_qp[h.probe] = h;
  ASSERT_EQ(by_qp.size(), 6u);
  auto mean_us = [](const HistogramReport& h) { return h.total_ns / 1e3 / h.hist.count(); };
  const HistogramReport& slow = by_qp.at("verbs qp 0x105");
  EXPECT_GE(mean_us(slow), 12000.0);
  for (const auto& [label, h] : by_qp) {
    ASSERT_TRUE(h.rank);
    EXPECT_EQ(h.rank->rank, 3);
    // The driver runs a round trip per QP in turn: each QP completed in
    // nearly every round (the first requests go before the probe).
    EXPECT_GE(h.hist.count(), slow.hist.count() * 9 / 10) << label;
    if (label != "verbs qp 0x105") {
      EXPECT_GE(mean_us(h), 200.0) << label;
      EXPECT_LT(mean_us(h) * 3, mean_us(slow)) << label;
    }
  }

  // The slow QP, said once and first. (Another QP can be said too where
  // the driver stalls for tens of ms early, on a busy node: its mean over
  // its first second's completions; its mean over the run is checked above.)
  std::vector<const DeviceEvent*> slow_qps;
  for (const DeviceEvent& e : events)
    if (e.type == "rdma.slow_qp" && e.fields.at("qp_num") == 0x105) slow_qps.push_back(&e);
  ASSERT_EQ(slow_qps.size(), 1u) << "the one slow QP, said once";
  auto first =
      std::find_if(events.begin(), events.end(), [](const DeviceEvent& e) { return e.type == "rdma.slow_qp"; });
  EXPECT_EQ(&*first, slow_qps[0]) << first->summary;
  EXPECT_EQ(slow_qps[0]->ranks, (std::vector<int>{3}));
  EXPECT_EQ(slow_qps[0]->pid, child->pid()) << "a QP is its process's";
  EXPECT_TRUE(slow_qps[0]->device.empty()) << "not joined through the NIC, which serves every rank on it";
  EXPECT_EQ(slow_qps[0]->fields.at("nic"), "rxe0");
  EXPECT_EQ(slow_qps[0]->fields.at("qp_num"), 0x105);
  EXPECT_NE(slow_qps[0]->summary.find("rank 3 pid " + std::to_string(child->pid()) +
                                      ": QP 0x105 on rxe0: its sends complete"),
            std::string::npos)
      << slow_qps[0]->summary;
  std::string lines;
  for (const std::string& l : (*sources)->qp_lifecycles()) lines += l + "\n";
  // The error counted on its QP (not timed), the flush not an error.
  EXPECT_NE(lines.find("; 1 completion(s) in error on rank 3 pid " + std::to_string(child->pid()) + " QP 0x101"),
            std::string::npos)
      << lines;
  EXPECT_EQ(lines.find("in error on rank 3 pid " + std::to_string(child->pid()) + " QP 0x102"), std::string::npos)
      << lines;
  EXPECT_NE(lines.find("6 QP(s)"), std::string::npos) << lines;
}

}  // namespace
}  // namespace slowburn::verbs_program_test
