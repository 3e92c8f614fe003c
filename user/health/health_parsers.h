// The text formats `slowburn health` reads, parsed: strings in, values out,
// never a file. Kernel log records (/dev/kmsg and dmesg text), CPU lists,
// taint flags, InfiniBand port attributes, process names. Tables, not ifs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/cpu_list.h"
#include "health/check_row.h"

namespace slowburn {

// A sysfs counter ("12\n"); nullopt when not a non-negative number.
std::optional<uint64_t> parse_counter(std::string_view text);

// /proc/sys/kernel/tainted, bit by bit (the kernel's
// Documentation/admin-guide/tainted-kernels.rst). `severity`: what the bit
// means for a training node: ok (normal there: the NVIDIA driver is
// proprietary and out of tree), warn (look at it), fail (a machine check, a
// bad page, a kernel that oopsed).
struct TaintFlag {
  int bit = 0;
  char letter = '?';    // '?' for a bit this table does not name
  std::string meaning;  // "processor reported a Machine Check Exception (MCE)"
  CheckState severity = CheckState::warn;
};
std::vector<TaintFlag> decode_taint(uint64_t tainted);
// "PWO": the letters of the set bits, in bit order ('?' for unnamed ones).
std::string taint_letters(const std::vector<TaintFlag>& flags);

// One kernel log record: a /dev/kmsg record ("6,1234,5678901,-;message"),
// a `dmesg` text line ("[   12.345678] message", "<6>[ 12.3] message",
// "[Tue Mar  5 10:00:00 2024] message") or a bare message. nullopt for what
// carries no message: a /dev/kmsg continuation line (" SUBSYSTEM=pci") or
// an empty line.
struct KernelLogLine {
  std::optional<uint64_t> ts_us;  // since boot, when the line says
  std::optional<int> level;       // syslog level (0 emerg .. 7 debug), when the line says
  std::string message;
};
std::optional<KernelLogLine> parse_kernel_log_line(std::string_view line);
// "[   12.345678] message" (the message alone without a timestamp).
std::string format_kernel_log_line(const KernelLogLine& line);

// What a kernel log message is, for the checks that read the log.
enum class KernelLogClass { other, xid, machine_check, oops, hung_task, lockup };
KernelLogClass classify_kernel_log_message(std::string_view message);
// Within lockup: a hard lockup (NMI watchdog) is worse than a soft one.
bool is_hard_lockup_message(std::string_view message);
// Within machine_check: a line that says the error was not corrected.
bool is_uncorrected_machine_check(std::string_view message);

// InfiniBand port attributes (drivers/infiniband/core/sysfs.c): rate
// "200 Gb/sec (4X HDR)" -> 200; state "4: ACTIVE" -> ACTIVE; phys_state
// "5: LinkUp" -> LinkUp.
std::optional<double> parse_ib_rate_gbps(std::string_view text);
std::string parse_ib_state_name(std::string_view text);

// The time daemon a process name (/proc/PID/comm, 15 characters at most)
// belongs to: chronyd, ptp4l, phc2sys, ntpd, systemd-timesyncd; nullopt else.
std::optional<std::string> time_daemon_name(std::string_view comm);
// The name in /proc/PID/stat ("4001 (python) S ..."), when comm is absent.
std::optional<std::string> comm_from_stat(std::string_view stat);

}  // namespace slowburn
