#include "pcie/aer.h"

#include <fmt/format.h>

#include <charconv>
#include <sstream>

#include "core/strings.h"
#include "sysfs/pci_devices.h"

namespace slowburn {

namespace {

struct BitName {
  int bit;
  const char* short_name;  // drivers/pci/pcie/aer.c aer_*_error_string
  const char* long_name;   // older kernels' sysfs wording
};

constexpr BitName kCorrectable[] = {
    {0, "RxErr", "Receiver Error"},
    {6, "BadTLP", "Bad TLP"},
    {7, "BadDLLP", "Bad DLLP"},
    {8, "Rollover", "RELAY_NUM Rollover"},
    {12, "Timeout", "Replay Timer Timeout"},
    {13, "NonFatalErr", "Advisory Non-Fatal"},
    {14, "CorrIntErr", "Corrected Internal Error"},
    {15, "HeaderOF", "Header Log Overflow"},
};

constexpr BitName kUncorrectable[] = {
    {0, "Undefined", "Undefined"},
    {4, "DLP", "Data Link Protocol"},
    {5, "SDES", "Surprise Down Error"},
    {12, "TLP", "Poisoned TLP"},
    {13, "FCP", "Flow Control Protocol"},
    {14, "CmpltTO", "Completion Timeout"},
    {15, "CmpltAbrt", "Completer Abort"},
    {16, "UnxCmplt", "Unexpected Completion"},
    {17, "RxOF", "Receiver Overflow"},
    {18, "MalfTLP", "Malformed TLP"},
    {19, "ECRC", "ECRC"},
    {20, "UnsupReq", "Unsupported Request"},
    {21, "ACSViol", "ACS Violation"},
    {22, "UncorrIntErr", "Uncorrectable Internal Error"},
    {23, "BlockedTLP", "MC Blocked TLP"},
    {24, "AtomicOpBlocked", "AtomicOp Egress Blocked"},
    {25, "TLPBlockedErr", "TLP Prefix Blocked Error"},
    {26, "PoisonTLPBlocked", "Poisoned TLP Egress Blocked"},
    // Newer kernels (version unverified, FACTS.md).
    {27, "DMWrReqBlocked", "DMWr Request Egress Blocked"},
    {28, "IDECheck", "IDE Check Failed"},
    {29, "MisIDETLP", "Misrouted IDE TLP"},
    {30, "PCRC_CHECK", "PCRC Check Failed"},
    {31, "TLPXlatBlocked", "TLP Translation Egress Blocked"},
};

std::span<const BitName> table_for(AerSeverity severity) {
  if (severity == AerSeverity::correctable) return kCorrectable;
  return kUncorrectable;
}

// "Receiver Error" -> "RxErr"; unknown long names pass through.
std::string short_name_of(std::string_view name) {
  for (auto table : {std::span<const BitName>(kCorrectable), std::span<const BitName>(kUncorrectable)})
    for (const BitName& b : table)
      if (name == b.long_name || name == b.short_name) return b.short_name;
  return std::string(name);
}

// "BadTLP" -> 6, "bit 27" -> 27.
std::optional<int> bit_number(AerSeverity severity, const std::string& name) {
  for (const BitName& b : table_for(severity))
    if (name == b.short_name) return b.bit;
  if (name.rfind("bit ", 0) == 0) {
    int bit = -1;
    std::from_chars(name.data() + 4, name.data() + name.size(), bit);
    if (bit >= 0 && bit < 32) return bit;
  }
  return std::nullopt;
}

}  // namespace

std::string_view aer_severity_name(AerSeverity severity) {
  switch (severity) {
    case AerSeverity::nonfatal:
      return "nonfatal";
    case AerSeverity::fatal:
      return "fatal";
    case AerSeverity::correctable:
      return "correctable";
  }
  return "?";
}

std::vector<std::string> aer_status_bits(AerSeverity severity, uint32_t status) {
  std::vector<std::string> names;
  for (int bit = 0; bit < 32; ++bit) {
    if (!(status & (1u << bit))) continue;
    std::string name = fmt::format("bit {}", bit);
    for (const BitName& b : table_for(severity))
      if (b.bit == bit) name = b.short_name;
    names.push_back(std::move(name));
  }
  return names;
}

Result<AerEvent> decode_aer_record(const TracepointFormat& format, std::span<const std::byte> record) {
  RecordView view(format, record);
  auto device = view.string("dev_name");
  auto status = view.unsigned_value("status");
  auto severity = view.unsigned_value("severity");
  if (!device || !status || !severity)
    return make_error("ras:aer_event record without dev_name, status or severity ({} bytes): format mismatch",
                      record.size());
  if (*severity > 2) return make_error("ras:aer_event severity {} is not 0, 1 or 2", *severity);
  AerEvent event;
  event.device = *device;
  event.severity = static_cast<AerSeverity>(*severity);
  event.status = static_cast<uint32_t>(*status);
  event.bits = aer_status_bits(event.severity, event.status);
  // Present since 4.18; 4 words until the flit-mode log made it 14.
  if (view.unsigned_value("tlp_header_valid").value_or(0)) event.tlp_header = view.u32_array("tlp_header");
  if (auto bus = view.string("bus_type"); bus && !bus->empty()) event.bus_type = *bus;
  event.source = "tracepoint";
  return event;
}

std::map<AerSeverity, AerCounters> read_aer_counters(const std::filesystem::path& sysfs_root, const std::string& bdf) {
  static const std::pair<const char*, AerSeverity> kFiles[] = {{"aer_dev_correctable", AerSeverity::correctable},
                                                               {"aer_dev_fatal", AerSeverity::fatal},
                                                               {"aer_dev_nonfatal", AerSeverity::nonfatal}};
  std::vector<std::string> names;
  for (const auto& [file, severity] : kFiles) names.push_back(file);
  std::map<std::string, std::string> texts = read_device_files(sysfs_root, bdf, names);
  std::map<AerSeverity, AerCounters> out;
  for (const auto& [file, severity] : kFiles)
    if (auto it = texts.find(file); it != texts.end()) {
      std::istringstream in(it->second);
      out[severity] = parse_aer_counters(in);
    }
  return out;
}

AerCounters parse_aer_counters(std::istream& in) {
  AerCounters counters;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    size_t space = line.rfind(' ');
    auto value =
        space == std::string::npos ? std::nullopt : parse_number<uint64_t>(std::string_view(line).substr(space + 1));
    if (!value) {
      counters.malformed_lines.push_back(line);
      continue;
    }
    std::string name = line.substr(0, space);
    if (name.rfind("TOTAL_ERR_", 0) == 0) {
      counters.total = *value;
      continue;
    }
    // "dev_cor_errs_bit[7] 3" -> "bit 7"
    size_t bracket = name.find("_bit[");
    if (bracket != std::string::npos && name.back() == ']')
      name = "bit " + name.substr(bracket + 5, name.size() - bracket - 6);
    counters.by_name[short_name_of(name)] = *value;
  }
  return counters;
}

std::vector<AerEvent> AerCounterMonitor::observe(const std::string& device,
                                                 const std::map<AerSeverity, AerCounters>& counters) {
  std::vector<AerEvent> events;
  for (const auto& [severity, reading] : counters) {
    auto [it, first] = last_.try_emplace({device, severity});
    for (const auto& [name, value] : reading.by_name) {
      // An unnamed bit's line appears only once it is non-zero: after the
      // first reading, a name never seen before counted from 0.
      auto previous = it->second.find(name);
      uint64_t before = previous != it->second.end() ? previous->second : 0;
      if (!first && value > before) {
        AerEvent event;
        event.device = device;
        event.severity = severity;
        event.bits = {name};
        if (auto bit = bit_number(severity, name)) event.status = 1u << *bit;
        event.count = value - before;
        event.source = "sysfs";
        events.push_back(std::move(event));
      }
      it->second[name] = value;
    }
  }
  return events;
}

}  // namespace slowburn
