#include "sysfs/topology.h"

#include <gtest/gtest.h>

#include <fstream>

#include "pcie/aer.h"
#include "support/temp_dir.h"

namespace slowburn::topology_test {
namespace {

const std::filesystem::path kFixtures = std::filesystem::path(SLOWBURN_SOURCE_DIR) / "tests/fixtures";
const std::filesystem::path kSys = kFixtures / "sys";
const std::filesystem::path kProc = kFixtures / "proc-nvidia";

TEST(PciDevices, ReadsTheFixtureTree) {
  auto devices = read_pci_devices(kSys);
  ASSERT_EQ(devices.size(), 13u);
  auto find = [&](const std::string& bdf) -> const PciDevice& {
    for (const PciDevice& d : devices)
      if (d.bdf == bdf) return d;
    throw std::runtime_error("no " + bdf);
  };
  const PciDevice& gpu = find("0000:03:00.0");
  EXPECT_EQ(gpu.vendor, 0x10de);
  EXPECT_EQ(gpu.device, 0x2330);
  EXPECT_EQ(gpu.class_code, 0x030200u);
  EXPECT_EQ(gpu.parent_bdf, "0000:02:00.0");
  EXPECT_EQ(gpu.link.current_speed_gts, 16.0);
  EXPECT_EQ(gpu.link.max_speed_gts, 32.0);
  EXPECT_EQ(gpu.link.current_width, 16u);
  EXPECT_TRUE(gpu.notes.empty());
  EXPECT_FALSE(find("0000:00:01.0").parent_bdf.has_value());  // on the host bridge
  EXPECT_EQ(find("0000:00:01.0").port_type, 4);               // from its config space
  EXPECT_EQ(find("0000:01:00.0").port_type, 5);
  EXPECT_EQ(gpu.port_type, 0);
  EXPECT_FALSE(find("0000:00:1f.0").port_type.has_value());  // no PCIe capability
  EXPECT_TRUE(find("0000:04:00.1").virtual_function);
  const PciDevice& isa = find("0000:00:1f.0");
  EXPECT_FALSE(isa.link.current_speed_gts.has_value());  // no link files: normal, no note
  EXPECT_TRUE(isa.notes.empty());
}

TEST(PciDevices, MalformedAttributesAreNotesOnThatDevice) {
  for (const PciDevice& d : read_pci_devices(kSys)) {
    if (d.bdf != "0000:00:04.0") continue;
    std::string all;
    for (const std::string& n : d.notes) all += n + "\n";
    EXPECT_NE(all.find("class: missing"), std::string::npos) << all;
    EXPECT_NE(all.find("current_link_speed: 'fast' is not a link speed"), std::string::npos) << all;
    EXPECT_NE(all.find("current_link_width: 'abc' is not a width"), std::string::npos) << all;
    EXPECT_EQ(d.link.max_speed_gts, 8.0);  // old-kernel spelling still parsed
    return;
  }
  FAIL() << "0000:00:04.0 missing";
}

TEST(PciDevices, MissingTreeIsEmptyNotACrash) { EXPECT_TRUE(read_pci_devices(kFixtures / "no-such-sysfs").empty()); }

TEST(AerSysfs, CountersOfBothStyles) {
  auto gpu = read_aer_counters(kSys, "0000:03:00.0");
  EXPECT_EQ(gpu[AerSeverity::correctable].by_name["BadTLP"], 3u);
  EXPECT_EQ(gpu[AerSeverity::nonfatal].by_name["CmpltTO"], 1u);
  EXPECT_EQ(gpu[AerSeverity::nonfatal].by_name["bit 27"], 2u);
  auto nic = read_aer_counters(kSys, "0000:04:00.0");
  EXPECT_EQ(nic[AerSeverity::correctable].by_name["RxErr"], 5u);
  EXPECT_EQ(nic[AerSeverity::fatal].malformed_lines, (std::vector<std::string>{"Receiver Error five"}));
  EXPECT_FALSE(nic.contains(AerSeverity::nonfatal));
  EXPECT_TRUE(read_aer_counters(kSys, "0000:00:1f.0").empty());
}

TEST(Topology, RolesLabelsAndNames) {
  Topology topo = Topology::read(kSys, kProc);
  const TopologyDevice* gpu0 = topo.find("0000:03:00");  // Xid spelling: no function
  ASSERT_NE(gpu0, nullptr);
  EXPECT_EQ(gpu0->role, DeviceRole::gpu);
  EXPECT_EQ(gpu0->gpu_index, 0);
  EXPECT_EQ(gpu0->gpu_uuid, "GPU-5c5a1f0e-0b6e-4bd9-8a3c-2f4a1c111111");
  EXPECT_EQ(gpu0->label, "GPU 0 NVIDIA H100 80GB HBM3");
  const TopologyDevice* nic = topo.find("mlx5_0");
  ASSERT_NE(nic, nullptr);
  EXPECT_EQ(nic->pci.bdf, "0000:04:00.0");
  EXPECT_EQ(nic->role, DeviceRole::nic);
  EXPECT_TRUE(nic->rdma);
  EXPECT_EQ(nic->names, (std::vector<std::string>{"mlx5_0", "ib0"}));
  EXPECT_EQ(topo.find("eth2")->role, DeviceRole::nic);
  EXPECT_EQ(topo.find("0000:00:01.0")->role, DeviceRole::root_port);
  EXPECT_EQ(topo.find("0000:02:00.0")->role, DeviceRole::switch_port);
  EXPECT_EQ(topo.find("0000:00:1f.0")->role, DeviceRole::other);
  EXPECT_EQ(topo.path_to_root("0000:03:00.0"),
            (std::vector<std::string>{"0000:00:01.0", "0000:01:00.0", "0000:02:00.0", "0000:03:00.0"}));
}

TEST(Topology, GpuIndexFallsBackToPciOrderWithoutTheDriver) {
  Topology topo = Topology::read(kSys, kFixtures / "no-such-proc");
  EXPECT_EQ(topo.find("0000:03:00.0")->gpu_index, 0);
  EXPECT_EQ(topo.find("0000:05:00.0")->gpu_index, 1);
}

RankIdentity rank(int r, int local, std::string cuda = "", std::string hca = "") {
  RankIdentity id;
  id.rank = r;
  id.pid = 100 + r;
  id.local_rank = local;
  id.cuda_visible_devices = std::move(cuda);
  id.nccl_ib_hca = std::move(hca);
  return id;
}

TEST(Topology, RanksJoinTheirGpuAndNearestNic) {
  Topology topo = Topology::read(kSys, kProc);
  // Rank 0 by local rank, rank 1 by CUDA_VISIBLE_DEVICES UUID.
  topo.assign_ranks({rank(0, 0), rank(1, 0, "GPU-5c5a1f0e-0b6e-4bd9-8a3c-2f4a1c222222")});
  EXPECT_EQ(topo.find("0000:03:00.0")->ranks, (std::vector<int>{0}));
  EXPECT_EQ(topo.find("0000:05:00.0")->ranks, (std::vector<int>{1}));
  // Both use the only InfiniBand NIC (eth2 is plain Ethernet).
  EXPECT_EQ(topo.find("mlx5_0")->ranks, (std::vector<int>{0, 1}));
  // A downtrained root port concerns every rank behind it.
  EXPECT_EQ(topo.ranks_behind("0000:00:01.0"), (std::vector<int>{0, 1}));
  EXPECT_EQ(topo.ranks_behind("0000:02:00.0"), (std::vector<int>{0}));
  EXPECT_EQ(topo.ranks_behind("0000:00:02.0"), (std::vector<int>{1}));
  EXPECT_TRUE(topo.ranks_behind("0000:00:03.0").empty());
  EXPECT_TRUE(topo.notes().empty());
}

TEST(Topology, ProcessesOfTwoJobsWithTheSameRankNumbersAreToldApart) {
  Topology topo = Topology::read(kSys, kProc);
  RankIdentity a = rank(0, 0), b = rank(0, 1);  // rank 0 of two jobs, on GPU 0 and GPU 1
  b.pid = 200;
  topo.assign_ranks({a, b});
  EXPECT_TRUE(topo.serves("0000:03:00.0", a.pid));
  EXPECT_FALSE(topo.serves("0000:03:00.0", b.pid));
  EXPECT_TRUE(topo.serves("0000:05:00.0", b.pid));
  EXPECT_TRUE(topo.serves("0000:00:01.0", b.pid)) << "the root port above both";
  // Re-assigned when a job ends: its processes are forgotten.
  topo.assign_ranks({b});
  EXPECT_FALSE(topo.serves("0000:03:00.0", a.pid));
}

TEST(Topology, NcclIbHcaAndUnmappableRanks) {
  Topology topo = Topology::read(kSys, kProc);
  topo.assign_ranks({rank(0, 0, "1", "=mlx5_0:1"), rank(1, 0, "7"), rank(2, 5), rank(3, 0, "0", "^=mlx5_0")});
  EXPECT_EQ(topo.find("0000:05:00.0")->ranks, (std::vector<int>{0}));  // CUDA_VISIBLE_DEVICES=1
  // Rank 0 names it; ranks 1 and 2 (no GPU mapped) take the only RDMA NIC.
  EXPECT_EQ(topo.find("mlx5_0")->ranks, (std::vector<int>{0, 1, 2}));
  // Rank 3 excluded the only RDMA NIC: NCCL would not use plain Ethernet for IB.
  EXPECT_TRUE(topo.find("eth2")->ranks.empty());
  EXPECT_EQ(topo.find("0000:03:00.0")->ranks, (std::vector<int>{3}));
  ASSERT_EQ(topo.notes().size(), 3u);
  EXPECT_NE(topo.notes()[0].find("CUDA_VISIBLE_DEVICES entry '7' matches no GPU"), std::string::npos);
  EXPECT_NE(topo.notes()[2].find("rank 2 (pid 102): no GPU could be mapped"), std::string::npos);
}

TEST(Topology, LinkPartnersFollowThePortTypes) {
  Topology topo = Topology::read(kSys, kProc);
  auto partners = [&](const char* bdf) {
    std::vector<std::string> out;
    for (const TopologyDevice* p : topo.link_partners(bdf)) out.push_back(p->pci.bdf);
    return out;
  };
  EXPECT_EQ(partners("0000:00:01.0"), (std::vector<std::string>{"0000:01:00.0"}));  // root port: its link is below
  EXPECT_EQ(partners("0000:01:00.0"), (std::vector<std::string>{"0000:00:01.0"}));  // upstream port: above
  EXPECT_EQ(partners("0000:02:00.0"), (std::vector<std::string>{"0000:03:00.0"}));  // downstream port: below
  EXPECT_EQ(partners("0000:03:00.0"), (std::vector<std::string>{"0000:02:00.0"}));  // endpoint: above
  EXPECT_TRUE(partners("0000:04:00.1").empty());                                    // a VF has no link
}

// Soft-RoCE has no device link: it is the PCI NIC its netdev is on, so a
// rank that names it (NCCL_IB_HCA) sits behind that NIC's root port. On a
// virtual netdev (a veth) it has no PCI path at all.
TEST(Topology, SoftRoceIsThePciNicOfItsNetdev) {
  testing::TempDir dir;
  std::filesystem::path sys = dir / "sys";
  std::filesystem::copy(kSys, sys,
                        std::filesystem::copy_options::recursive | std::filesystem::copy_options::copy_symlinks);
  auto add_rxe = [&](const std::string& name, const std::string& netdev) {
    std::filesystem::path ndevs = sys / "class/infiniband" / name / "ports/1/gid_attrs/ndevs";
    std::filesystem::create_directories(ndevs);
    std::ofstream(ndevs / "0") << netdev << "\n";
  };
  add_rxe("rxe0", "eth2");  // eth2: the plain Ethernet NIC 0000:06:00.0, below root port 0000:00:03.0
  std::filesystem::create_directories(sys / "class/net/veth0");
  add_rxe("rxe1", "veth0");
  Topology topo = Topology::read(sys, kProc);
  const TopologyDevice* rxe = topo.find("rxe0");
  ASSERT_NE(rxe, nullptr);
  EXPECT_EQ(rxe->pci.bdf, "0000:06:00.0");
  EXPECT_TRUE(rxe->rdma);
  EXPECT_EQ(topo.find("rxe1"), nullptr);
  topo.assign_ranks({rank(0, 0, "", "=rxe0"), rank(1, 1, "", "=mlx5_0")});
  EXPECT_EQ(topo.ranks_behind("0000:00:03.0"), (std::vector<int>{0}));
  EXPECT_TRUE(topo.serves("0000:00:03.0", 100));
  EXPECT_FALSE(topo.serves("0000:00:03.0", 101));

  // An Open MPI rank on UCX names its NIC by UCX_NET_DEVICES (device:port);
  // its Ethernet NIC for UCX's TCP transport, even beside an InfiniBand
  // one; "all", or a list that names no NIC here, is no hint.
  auto ucx = [](int r, std::string devices) {
    RankIdentity id = rank(r, r);
    id.launcher = "openmpi";
    id.ucx_net_devices = std::move(devices);
    return id;
  };
  topo.assign_ranks({ucx(0, "rxe0:1"), ucx(1, "eth2"), ucx(2, "all"), ucx(3, "mlx9_9:1")});
  EXPECT_EQ(topo.find("rxe0")->ranks, (std::vector<int>{0, 1})) << "rxe0 is eth2's PCI NIC";
  EXPECT_EQ(topo.find("mlx5_0")->ranks, (std::vector<int>{2, 3})) << "as without a hint: the RDMA NIC";
  RankIdentity both = ucx(4, "rxe0:1");
  both.nccl_ib_hca = "=mlx5_0";
  RankIdentity torchrun = ucx(5, " rxe0:1 ");  // NCCL without UCX ignores it
  torchrun.launcher = "torchrun";
  topo.assign_ranks({both, torchrun, ucx(6, " rxe0:1 "), ucx(7, "^mlx5_0")});
  EXPECT_EQ(topo.find("mlx5_0")->ranks, (std::vector<int>{4, 5, 7})) << "NCCL_IB_HCA first; no hint; an exclusion";
  EXPECT_EQ(topo.find("rxe0")->ranks, (std::vector<int>{6})) << "spaces around an entry";
}

}  // namespace
}  // namespace slowburn::topology_test
