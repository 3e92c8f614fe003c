// libFuzzer target for the sysfs attribute parsers: PCI link speed and
// width, vendor/device/class numbers, config space (the PCIe capability
// walk), BDFs, the aer_dev_* counter files and their monitor, RDMA
// counters and their deltas, --expect rules; and the rank hints a process
// sets in its own environment (CUDA_VISIBLE_DEVICES on the first line,
// NCCL_IB_HCA on the second), assigned on the fixture machine's topology.
// No crash, no hang, no out-of-bounds read (ASan and UBSan, `make fuzz`).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <string_view>

#include "core/strings.h"
#include "pcie/aer.h"
#include "pcie/link.h"
#include "rdma/counter_delta.h"
#include "sysfs/pci_devices.h"
#include "sysfs/topology.h"

using namespace slowburn;

namespace {

void check_link_attributes(std::string_view text) {
  if (auto speed = parse_link_speed(text); speed && *speed < 0) std::abort();
  (void)parse_number<unsigned>(trim_right(text), 10);
  (void)parse_number<uint16_t>(trim_right(text), 16);
  (void)parse_number<uint32_t>(trim_right(text), 16);
  (void)pcie_port_type(text);
  if (is_bdf(text) && normalize_bdf(text).size() != text.size()) std::abort();
  (void)normalize_bdf(text);
  if (auto rule = parse_expectation_rule(text); rule && !rule->expectation.width && !rule->expectation.speed_gts)
    std::abort();
}

void check_aer_counters(std::string_view text) {
  std::istringstream first{std::string(text)};
  std::map<AerSeverity, AerCounters> reading;
  reading[AerSeverity::correctable] = parse_aer_counters(first);
  reading[AerSeverity::fatal] = reading[AerSeverity::correctable];
  reading[AerSeverity::nonfatal] = reading[AerSeverity::correctable];
  AerCounterMonitor monitor;
  (void)monitor.observe("0000:3b:00.0", {});
  (void)monitor.observe("0000:3b:00.0", reading);
  // The same names counted up: every one is an event with that increase.
  for (auto& [severity, counters] : reading)
    for (auto& [name, value] : counters.by_name) value = value == UINT64_MAX ? value : value + 1;
  for (const AerEvent& event : monitor.observe("0000:3b:00.0", reading))
    if (event.count == 0) std::abort();
}

void check_rdma_counter(std::string_view text) {
  auto value = parse_number<uint64_t>(trim_right(text));
  if (!value) return;
  auto saturation = ib_counter_saturation(text);
  for (uint64_t prev : {uint64_t{0}, *value / 2, *value, UINT64_MAX, uint64_t{UINT32_MAX}}) {
    (void)counter_delta(prev, *value, saturation);
    (void)counter_delta(*value, prev, uint64_t{0xffff});
  }
}

// The rank's GPU and NIC hints against a fixed topology (read once).
void check_rank_hints(std::string_view text) {
  static const Topology topology =
      Topology::read(SLOWBURN_SOURCE_DIR "/tests/fixtures/sys", SLOWBURN_SOURCE_DIR "/tests/fixtures/proc-nvidia");
  size_t newline = text.find('\n');
  RankIdentity rank;
  rank.pid = 101;
  rank.rank = 0;
  rank.local_rank = static_cast<int>(text.size() % 9) - 1;
  rank.cuda_visible_devices = std::string(text.substr(0, newline));
  if (newline != std::string_view::npos) rank.nccl_ib_hca = std::string(text.substr(newline + 1));
  Topology copy = topology;
  copy.assign_ranks({rank});
  for (const TopologyDevice& device : copy.devices())
    for (int r : device.ranks)
      if (r != 0) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  check_link_attributes(text);
  check_aer_counters(text);
  check_rdma_counter(text);
  check_rank_hints(text);
  return 0;
}
