// A network of the test's own for a job's ranks: each rank in a network
// namespace of its own with one veth link (eth0, 10.77.0.R+1/24) to a
// bridge in a hub namespace, as each node has a NIC to a switch. Every
// namespace is held by a process of the test's (unshare --net sleep) and
// goes with it, or after kHoldS where the test was killed before it could
// stop them: nothing of the host's network is touched (the kernel may load
// its bridge and veth modules once). A fault goes on a link's bridge port
// (tests/targets/lossy_link.cpp on bridge_port(R) in hub_netns()).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/subprocess.h"

namespace slowburn::testing {

class RankNetwork {
 public:
  // nullopt, with `why` set, where this machine cannot make it (no ip or
  // nsenter, a kernel without veth or bridges).
  static std::optional<RankNetwork> create(int ranks, std::string& why);

  std::string netns(int rank) const;  // /proc/PID/ns/net of the rank's namespace
  std::string hub_netns() const;
  static std::string address(int rank);           // 10.77.0.R+1
  static std::string bridge_port(int rank);       // the hub's end of the rank's link
  static constexpr const char* kDevice = "eth0";  // the rank's end
  static constexpr int kHoldS = 900;              // the namespaces' longest life

 private:
  std::vector<std::unique_ptr<Subprocess>> holders_;  // the hub's, then each rank's
};

}  // namespace slowburn::testing
