// PCIe AER: status bits decoded by severity (tables from
// include/uapi/linux/pci_regs.h and drivers/pci/pcie/aer.c), the ras:aer_event
// record of any kernel layout, and the sysfs aer_dev_* counters in both
// name styles. Pure: records and file contents in, events out.
#pragma once

#include <cstdint>
#include <filesystem>
#include <istream>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"
#include "tracefs/format.h"

namespace slowburn {

// include/linux/aer.h
enum class AerSeverity : uint8_t { nonfatal = 0, fatal = 1, correctable = 2 };
std::string_view aer_severity_name(AerSeverity severity);

// Short names of the set bits ("RxErr", "BadTLP"); a bit without a name is
// "bit N". The raw status stays next to them in every event.
std::vector<std::string> aer_status_bits(AerSeverity severity, uint32_t status);

struct AerEvent {
  std::string device;  // BDF, "0000:3b:00.0"
  AerSeverity severity = AerSeverity::correctable;
  uint32_t status = 0;
  std::vector<std::string> bits;
  std::optional<std::vector<uint32_t>> tlp_header;  // when the kernel logged a valid one
  std::string bus_type = "PCIe";                    // "CXL" on v7.0+ when it says so
  uint64_t count = 1;                               // > 1 for counter deltas
  std::string source;                               // "tracepoint" or "sysfs"
};

// A raw ras:aer_event record, decoded through the format of the running
// kernel (4.4: no TLP header; 4.18: 4 header words; 6.15: 14; 7.0: bus_type).
Result<AerEvent> decode_aer_record(const TracepointFormat& format, std::span<const std::byte> record);

// sysfs aer_dev_correctable / aer_dev_fatal / aer_dev_nonfatal: "RxErr 2",
// or old kernels' "Receiver Error 2", or "dev_cor_errs_bit[N] v" for an
// unnamed bit; TOTAL_ERR_* lines included. Keys are the short names.
struct AerCounters {
  std::map<std::string, uint64_t> by_name;
  std::optional<uint64_t> total;
  std::vector<std::string> malformed_lines;
};
AerCounters parse_aer_counters(std::istream& in);

// A device's aer_dev_correctable / aer_dev_fatal / aer_dev_nonfatal, read
// through the sysfs reader; a severity without its file is absent.
std::map<AerSeverity, AerCounters> read_aer_counters(const std::filesystem::path& sysfs_root, const std::string& bdf);

// Turns successive counter readings of devices into events: one AerEvent per
// (device, severity, error name) whose count went up, with the increase as
// its count. The first reading is the baseline; a counter that goes down
// (device reset, driver reload) is re-baselined, not reported.
class AerCounterMonitor {
 public:
  std::vector<AerEvent> observe(const std::string& device, const std::map<AerSeverity, AerCounters>& counters);

 private:
  std::map<std::pair<std::string, AerSeverity>, std::map<std::string, uint64_t>> last_;
};

}  // namespace slowburn
