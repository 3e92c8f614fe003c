// NVIDIA Xid / NVSwitch SXid kernel log lines -> typed events. Every format
// the driver has printed (shared/FACTS.md): with and without pid/name, MIG
// instances, the old PCI address form, "caused by previous Xid N", SXid.
// Pure: takes the line, nothing else.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace slowburn {

struct XidEvent {
  bool nvswitch = false;  // SXid from nvidia-nvswitchN
  int code = 0;
  std::string pci;                      // as printed: "0000:3b:00" (Xid: no function), "0000:05:00.0" (SXid)
  std::optional<int> gpu_instance;      // MIG GPU-I
  std::optional<int> compute_instance;  // MIG GPU-CI
  std::optional<int> switch_index;      // SXid: N of nvidia-nvswitchN
  std::optional<int> pid;               // null when absent or '<unknown>'
  std::optional<std::string> process;   // null when absent, '<unknown>' or empty
  std::string message;
  std::optional<int> caused_by;  // Xid 45: "... caused by previous Xid N"
};

// nullopt when the line is not an Xid / SXid line (or is too damaged to
// name a code): callers count those, they are never dropped silently.
std::optional<XidEvent> parse_xid_line(std::string_view line);

// What follows the code, in the log line and in the driver tracepoint's msg
// alike: "pid=1234, name=python3, <message>" with either field optional or
// '<unknown>', and "caused by previous Xid N" at the end of an Xid 45.
void parse_xid_message(std::string_view message, XidEvent& event);

// True when a line starts like one, before parsing: the same test the
// kernel-side filter applies (bpf/kmsg_xid.bpf.c).
bool looks_like_xid_line(std::string_view line);

}  // namespace slowburn
