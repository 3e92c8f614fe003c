// What an Xid code means and what to do about it (NVIDIA's Xid catalog, as
// summarised in shared/FACTS.md). An unknown code is reported as unknown,
// never dropped.
#pragma once

#include <string>

namespace slowburn {

struct XidInfo {
  std::string meaning;
  std::string severity;  // informational, restart-app, reset-gpu, reboot-node, hardware, unknown
  std::string action;
  // The family `slowburn health` counts it in: application, ecc, row-remap,
  // memory, nvlink, bus, gsp, firmware, engine, c2c, init, recovery, other.
  std::string family = "other";
  // A sign of silent-data-corruption risk (ECC, row remapping, DRAM/SRAM).
  bool sdc = false;
};

XidInfo xid_info(int code);
// With the line's message: Xid 154 says which recovery action it now needs
// ("... to 0x1 (GPU Reset Required)"), which decides its severity.
XidInfo xid_info(int code, const std::string& message);
// SXid codes are NVSwitch-specific: no catalog here, the message is what there is.
XidInfo sxid_info(int code);
// The one table, both ways: an Xid's (or an SXid's: "nvswitch") family,
// and whether it speaks of silent data corruption.
std::string xid_family(int code, bool nvswitch);
bool xid_sdc_relevant(int code, bool nvswitch);

}  // namespace slowburn
