#include "nvidia/xid_catalog.h"

#include <fmt/format.h>

namespace slowburn {

namespace {

struct Row {
  int first, last;
  const char* meaning;
  const char* severity;
  const char* action;
  const char* family;
  bool sdc;
};

// Table, not ifs: one row per code (or range), as FACTS.md lists them.
constexpr Row kCatalog[] = {
    {13, 13, "graphics engine exception", "restart-app", "restart the application", "application", false},
    {31, 31, "GPU memory page (MMU) fault", "restart-app", "restart the application", "application", false},
    {43, 43, "GPU stopped processing: channel reset", "informational", "none needed", "application", false},
    {45, 45, "preemptive cleanup (channels removed)", "informational", "follow the Xid that caused it", "application",
     false},
    {48, 48, "double-bit ECC error", "reset-gpu", "reset the GPU", "ecc", true},
    {62, 62, "internal micro-controller (PMU) halt", "reset-gpu", "reset the GPU", "firmware", false},
    // ECC: a row remapped after errors is memory degrading, never "informational" (SDC risk).
    {63, 63, "row remapping / page retirement event (ECC)", "hardware",
     "reset the GPU to activate the remapping; watch the ECC counters", "row-remap", true},
    {64, 64, "row remapping / page retirement failure", "reset-gpu", "reset the GPU", "row-remap", true},
    {68, 68, "NVDEC0 exception", "restart-app", "restart the application", "application", false},
    {69, 69, "graphics engine class error", "restart-app", "restart the application", "application", false},
    {74, 74, "NVLink error", "hardware", "check the NVLink links (nvidia-smi nvlink -e); reset if it persists",
     "nvlink", false},
    {79, 79, "GPU has fallen off the bus", "reboot-node", "reboot the node; contact support if it recurs", "bus",
     false},
    {92, 92, "high single-bit ECC error rate", "hardware", "watch the ECC counters; plan a GPU reset", "ecc", true},
    {94, 94, "contained ECC error", "restart-app", "restart the application", "ecc", true},
    {95, 95, "uncontained ECC error", "reset-gpu", "reset the GPU", "ecc", true},
    {109, 109, "context switch timeout", "reset-gpu", "reset the GPU", "engine", false},
    {119, 119, "GSP RPC timeout", "reset-gpu", "reset the GPU", "gsp", false},
    {120, 120, "GSP error", "reset-gpu", "reset the GPU", "gsp", false},
    {121, 121, "C2C link error", "hardware", "see NVIDIA's Xid catalog for Xid 121", "c2c", false},
    {140, 140, "unrecovered ECC error", "reset-gpu", "reset the GPU", "ecc", true},
    {143, 143, "GPU initialization error", "hardware", "see NVIDIA's Xid catalog for Xid 143", "init", false},
    {144, 150, "NVLink (NVLink5) error", "hardware", "check the NVLink links; see NVIDIA's Xid catalog", "nvlink",
     false},
    {154, 154, "GPU recovery action changed", "hardware",
     "follow the recovery action in the message (GPU reset, node reboot, drain)", "recovery", false},
    {167, 167, "PCIe fatal timeout", "hardware", "see NVIDIA's Xid catalog for Xid 167", "bus", false},
    {171, 171, "uncorrectable DRAM error", "hardware", "see NVIDIA's Xid catalog for Xid 171", "memory", true},
    {172, 172, "uncorrectable SRAM error", "hardware", "see NVIDIA's Xid catalog for Xid 172", "memory", true},
    {176, 176, "PCIe correctable error fault", "hardware", "see NVIDIA's Xid catalog for Xid 176", "bus", false},
};

}  // namespace

XidInfo xid_info(int code) {
  for (const Row& row : kCatalog)
    if (code >= row.first && code <= row.last) return {row.meaning, row.severity, row.action, row.family, row.sdc};
  return {fmt::format("unknown Xid {}", code), "unknown", "look the code up in NVIDIA's Xid catalog"};
}

XidInfo xid_info(int code, const std::string& message) {
  XidInfo info = xid_info(code);
  if (code != 154) return info;
  // Recovery actions (FACTS.md): 0 none, 1 GPU reset, 2 node reboot, 3 drain P2P, 4 drain and reset.
  static constexpr std::pair<const char*, const char*> kActions[] = {
      {"informational", "none needed"},
      {"reset-gpu", "reset the GPU"},
      {"reboot-node", "reboot the node"},
      {"hardware", "drain peer-to-peer traffic from the GPU"},
      {"reset-gpu", "drain the GPU, then reset it"},
  };
  size_t to = message.rfind("to 0x");
  if (to == std::string::npos || to + 5 >= message.size()) return info;
  char digit = message[to + 5];
  if (digit < '0' || digit > '4') return info;
  auto [severity, action] = kActions[digit - '0'];
  info.severity = severity;
  info.action = action;
  return info;
}

XidInfo sxid_info(int code) {
  return {fmt::format("NVSwitch SXid {}", code), "unknown", "look the code up in NVIDIA's NVSwitch SXid catalog",
          "nvswitch", false};
}

std::string xid_family(int code, bool nvswitch) { return (nvswitch ? sxid_info(code) : xid_info(code)).family; }

bool xid_sdc_relevant(int code, bool nvswitch) { return !nvswitch && xid_info(code).sdc; }

}  // namespace slowburn
