#include "support/rank_network.h"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "support/temp_dir.h"

namespace slowburn::testing {

namespace {

// Runs argv; empty when it succeeded, else what it said.
std::string run(const std::vector<std::string>& argv) {
  TempDir dir;
  std::string out = (dir.path() / "out").string();
  auto child = Subprocess::spawn(argv, {out, {}});
  if (!child) return child.error().message;
  auto status = child->wait_for(std::chrono::seconds(10));
  if (status && *status == 0) return {};
  std::ifstream in(out);
  std::stringstream said;
  said << in.rdbuf();
  std::string command;
  for (const std::string& a : argv) command += (command.empty() ? "" : " ") + a;
  return fmt::format("{}: {}", command, status ? said.str() : std::string("timed out"));
}

std::vector<std::string> in(const std::string& netns, std::vector<std::string> argv) {
  argv.insert(argv.begin(), {"nsenter", "--net=" + netns});
  return argv;
}

}  // namespace

std::string RankNetwork::netns(int rank) const { return fmt::format("/proc/{}/ns/net", holders_.at(1 + rank)->pid()); }
std::string RankNetwork::hub_netns() const { return fmt::format("/proc/{}/ns/net", holders_.at(0)->pid()); }
std::string RankNetwork::address(int rank) { return fmt::format("10.77.0.{}", rank + 1); }
std::string RankNetwork::bridge_port(int rank) { return fmt::format("h{}", rank); }

std::optional<RankNetwork> RankNetwork::create(int ranks, std::string& why) {
  for (const char* tool : {"ip", "nsenter", "unshare"})
    if (!find_program(tool)) {
      why = fmt::format("{} is not installed (iproute2, util-linux: make deps)", tool);
      return std::nullopt;
    }
  RankNetwork net;
  for (int i = 0; i <= ranks; ++i) {
    // Bounded: a test killed before its destructors ran leaves nothing for long.
    auto holder = Subprocess::spawn({"unshare", "--net", "sleep", std::to_string(kHoldS)});
    if (!holder) {
      why = holder.error().message;
      return std::nullopt;
    }
    net.holders_.push_back(std::make_unique<Subprocess>(std::move(*holder)));
  }
  // unshare has made the namespace once its sleep runs in it.
  const std::filesystem::path own = std::filesystem::read_symlink("/proc/self/ns/net");
  for (int i = 0; i <= ranks; ++i) {
    Subprocess& holder = *net.holders_[i];
    bool moved = false;
    for (int tries = 0; tries < 200 && !moved; ++tries) {
      if (auto status = holder.poll()) {
        why = fmt::format("unshare --net exited with status {}: no network namespace", *status);
        return std::nullopt;
      }
      std::error_code ec;
      auto theirs = std::filesystem::read_symlink(fmt::format("/proc/{}/ns/net", holder.pid()), ec);
      moved = !ec && theirs != own;
      if (!moved) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!moved) {
      why = "unshare --net did not make a network namespace in 2 s";
      return std::nullopt;
    }
  }
  std::string hub = net.hub_netns();
  if (std::string e = run(in(hub, {"ip", "link", "add", "br0", "type", "bridge"})); !e.empty()) {
    why = "this kernel makes no bridge device: " + e;
    return std::nullopt;
  }
  std::vector<std::vector<std::string>> steps = {in(hub, {"ip", "link", "set", "br0", "up"})};
  for (int r = 0; r < ranks; ++r) {
    std::string port = bridge_port(r), rank_ns = net.netns(r);
    std::string holder = std::to_string(net.holders_[1 + r]->pid());
    steps.push_back(in(hub, {"ip", "link", "add", port, "type", "veth", "peer", "name", kDevice, "netns", holder}));
    steps.push_back(in(hub, {"ip", "link", "set", port, "master", "br0"}));
    steps.push_back(in(hub, {"ip", "link", "set", port, "up"}));
    steps.push_back(in(rank_ns, {"ip", "addr", "add", address(r) + "/24", "dev", kDevice}));
    steps.push_back(in(rank_ns, {"ip", "link", "set", kDevice, "up"}));
    steps.push_back(in(rank_ns, {"ip", "link", "set", "lo", "up"}));
  }
  for (const auto& step : steps)
    if (std::string e = run(step); !e.empty()) {
      why = "could not make the ranks' links: " + e;
      return std::nullopt;
    }
  return net;
}

}  // namespace slowburn::testing
