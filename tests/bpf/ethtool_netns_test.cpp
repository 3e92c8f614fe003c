// The SIOCETHTOOL reader for real: a veth pair in a network namespace this
// test creates (veth's driver statistics include peer_ifindex, the other
// end's interface index), and the fabric sampler on it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <net/if.h>
#include <sched.h>
#include <unistd.h>

#include <future>
#include <thread>

#include "core/subprocess.h"
#include "net/ethtool.h"
#include "rdma/fabric_sampler.h"
#include "support/test_support.h"

namespace slowburn::ethtool_netns_test {
namespace {

int run(const std::vector<std::string>& argv) {
  auto child = Subprocess::spawn(argv);
  if (!child) return -1;
  auto status = child->wait_for(std::chrono::seconds(10));
  return status ? *status : -1;
}

// A network namespace with a veth pair, removed at scope exit.
class VethNamespace {
 public:
  VethNamespace() : name_("slowburn-test-" + std::to_string(getpid())) {
    run({"ip", "netns", "del", name_});  // a leftover of a killed run
    ok_ = run({"ip", "netns", "add", name_}) == 0 &&
          run({"ip", "-n", name_, "link", "add", "sbveth0", "type", "veth", "peer", "name", "sbveth1"}) == 0 &&
          run({"ip", "-n", name_, "link", "set", "sbveth0", "up"}) == 0 &&
          run({"ip", "-n", name_, "link", "set", "sbveth1", "up"}) == 0;
  }
  ~VethNamespace() { run({"ip", "netns", "del", name_}); }
  bool ok() const { return ok_; }

  // Runs `fn` on a thread that has entered the namespace (setns moves only
  // the calling thread).
  template <typename Fn>
  auto inside(Fn fn) -> decltype(fn()) {
    return std::async(std::launch::async,
                      [&] {
                        int fd = open(("/run/netns/" + name_).c_str(), O_RDONLY | O_CLOEXEC);
                        if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) throw std::runtime_error("setns failed");
                        close(fd);
                        return fn();
                      })
        .get();
  }

 private:
  std::string name_;
  bool ok_ = false;
};

uint64_t stat_named(const EthtoolStats& stats, const std::string& name) {
  for (const auto& [n, v] : stats)
    if (n == name) return v;
  ADD_FAILURE() << "no statistic " << name;
  return 0;
}

TEST(Ethtool, ReadsVethStatisticsInANetworkNamespace) {
  SKIP_UNLESS_ROOT();
  if (!find_program("ip")) GTEST_SKIP() << "ip (iproute2) not installed: apt-get install iproute2";
  VethNamespace ns;
  if (!ns.ok()) GTEST_SKIP() << "cannot create a network namespace with a veth pair (kernel without CONFIG_VETH?)";

  auto [stats, peer_index, own_index] = ns.inside([] {
    return std::make_tuple(read_ethtool_stats("sbveth0"), if_nametoindex("sbveth1"), if_nametoindex("sbveth0"));
  });
  ASSERT_TRUE(stats.ok()) << stats.error().message;
  ASSERT_FALSE(stats->empty());
  ASSERT_NE(peer_index, 0u);
  EXPECT_EQ(stat_named(*stats, "peer_ifindex"), peer_index);
  EXPECT_NE(peer_index, own_index);

  // Not in this namespace, and not anywhere.
  auto outside = read_ethtool_stats("sbveth0");
  ASSERT_FALSE(outside.ok());
  EXPECT_NE(outside.error().message.find("no network interface sbveth0"), std::string::npos);
  auto bad_name = read_ethtool_stats("a-name-longer-than-ifnamsiz");
  ASSERT_FALSE(bad_name.ok());
  EXPECT_NE(bad_name.error().message.find("is not an interface name"), std::string::npos);

  // The sampler watches it as a netdev without an RDMA device.
  FabricSamplerOptions options;
  options.sysfs_root = "/nonexistent";  // no RDMA devices
  options.netdevs = {"sbveth1", "sbveth-gone"};
  FabricSnapshot snapshot = ns.inside([&] { return sample_fabric(options, 1); });
  ASSERT_EQ(snapshot.nics.size(), 1u);  // the missing interface is left out (the monitor calls it gone)
  EXPECT_EQ(snapshot.nics[0].nic, "sbveth1");
  EXPECT_EQ(snapshot.nics[0].counters.at("peer_ifindex"), own_index);
}

}  // namespace
}  // namespace slowburn::ethtool_netns_test
