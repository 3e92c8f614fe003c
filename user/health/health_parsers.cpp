#include "health/health_parsers.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "core/strings.h"
#include "nvidia/xid.h"

namespace slowburn {

namespace {

bool all_digits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool contains(std::string_view text, std::string_view needle) { return text.find(needle) != std::string_view::npos; }

bool contains_nocase(std::string_view text, std::string_view needle) {
  auto it = std::search(text.begin(), text.end(), needle.begin(), needle.end(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
  });
  return it != text.end();
}

// Documentation/admin-guide/tainted-kernels.rst, "Table for decoding tainted state".
struct TaintRow {
  int bit;
  char letter;
  const char* meaning;
  CheckState severity;
};
constexpr TaintRow kTaint[] = {
    {0, 'P', "proprietary module was loaded", CheckState::ok},
    {1, 'F', "module was force loaded", CheckState::warn},
    {2, 'S', "kernel running on an out of specification system", CheckState::warn},
    {3, 'R', "module was force unloaded", CheckState::warn},
    {4, 'M', "processor reported a Machine Check Exception (MCE)", CheckState::fail},
    {5, 'B', "bad page referenced or some unexpected page flags", CheckState::fail},
    {6, 'U', "taint requested by userspace application", CheckState::warn},
    {7, 'D', "kernel died recently, i.e. there was an OOPS or BUG", CheckState::fail},
    {8, 'A', "ACPI table overridden by user", CheckState::warn},
    {9, 'W', "kernel issued warning", CheckState::warn},
    {10, 'C', "staging driver was loaded", CheckState::warn},
    {11, 'I', "workaround for bug in platform firmware applied", CheckState::ok},
    {12, 'O', "externally-built (\"out-of-tree\") module was loaded", CheckState::ok},
    {13, 'E', "unsigned module was loaded", CheckState::ok},
    {14, 'L', "soft lockup occurred", CheckState::warn},
    {15, 'K', "kernel has been live patched", CheckState::ok},
    {16, 'X', "auxiliary taint, defined for and used by distros", CheckState::ok},
    {17, 'T', "kernel was built with the struct randomization plugin", CheckState::ok},
    {18, 'N', "an in-kernel test has been run", CheckState::warn},
};

// Kernel log patterns per class, checked in this order (a soft lockup's
// "BUG: soft lockup" is a lockup, not an oops).
struct LogPattern {
  KernelLogClass cls;
  std::string_view text;
  bool at_start;  // the message starts with it
};
constexpr LogPattern kLogPatterns[] = {
    {KernelLogClass::lockup, "BUG: soft lockup", false},  // "watchdog: BUG: soft lockup - CPU#3 stuck for 22s!"
    {KernelLogClass::lockup, "Watchdog detected hard LOCKUP", false},
    {KernelLogClass::lockup, "self-detected stall on CPU",
     false},  // "rcu: INFO: rcu_preempt self-detected stall on CPU"
    {KernelLogClass::lockup, "detected stalls on CPUs/tasks", false},
    {KernelLogClass::hung_task, "blocked for more than",
     false},  // "INFO: task kworker/0:1:12 blocked for more than 120 seconds."
    {KernelLogClass::oops, "Oops:", false},
    {KernelLogClass::oops, "Oops ", true},
    {KernelLogClass::oops, "kernel BUG at ", false},
    {KernelLogClass::oops, "BUG: unable to handle", false},
    {KernelLogClass::oops, "BUG: kernel NULL pointer dereference", false},
    {KernelLogClass::oops, "general protection fault", false},
    {KernelLogClass::oops, "Kernel panic", false},
    {KernelLogClass::machine_check, "Machine check events logged", false},
    {KernelLogClass::machine_check, "[Hardware Error]", false},
    {KernelLogClass::machine_check, "mce: ", true},
};

constexpr std::pair<std::string_view, std::string_view> kTimeDaemons[] = {
    {"chronyd", "chronyd"},
    {"ptp4l", "ptp4l"},
    {"phc2sys", "phc2sys"},
    {"ntpd", "ntpd"},
    // comm holds 15 characters: "systemd-timesyncd" reads "systemd-timesyn".
    {"systemd-timesyn", "systemd-timesyncd"},
    {"systemd-timesyncd", "systemd-timesyncd"},
};

// "6,1234,5678901,-" (level and facility, sequence, microseconds, flags; newer kernels append fields).
std::optional<KernelLogLine> parse_kmsg_record(std::string_view prefix, std::string_view message) {
  std::vector<std::string> fields = split(prefix, ',');
  if (fields.size() < 4 || !all_digits(fields[0]) || !all_digits(fields[1]) || !all_digits(fields[2]))
    return std::nullopt;
  auto priority = parse_number<uint32_t>(fields[0]);
  auto ts = parse_number<uint64_t>(fields[2]);
  if (!priority || !ts) return std::nullopt;
  KernelLogLine out;
  out.level = static_cast<int>(*priority & 7);
  out.ts_us = *ts;
  out.message = std::string(trim_right(message));
  return out;
}

// "12.345678" -> microseconds.
std::optional<uint64_t> seconds_to_us(std::string_view text) {
  text = trim(text);
  size_t dot = text.find('.');
  std::string_view whole = text.substr(0, dot);
  std::string_view frac = dot == std::string_view::npos ? std::string_view() : text.substr(dot + 1);
  if (!all_digits(whole) || (!frac.empty() && !all_digits(frac)) || whole.size() > 12) return std::nullopt;
  auto seconds = parse_number<uint64_t>(whole);
  if (!seconds) return std::nullopt;
  uint64_t us = 0;
  for (size_t i = 0; i < 6; ++i) us = us * 10 + (i < frac.size() ? static_cast<uint64_t>(frac[i] - '0') : 0);
  return *seconds * 1'000'000 + us;
}

}  // namespace

std::optional<uint64_t> parse_counter(std::string_view text) { return parse_number<uint64_t>(trim(text)); }

std::vector<TaintFlag> decode_taint(uint64_t tainted) {
  std::vector<TaintFlag> flags;
  for (int bit = 0; bit < 64; ++bit) {
    if (!(tainted & (uint64_t{1} << bit))) continue;
    auto row = std::find_if(std::begin(kTaint), std::end(kTaint), [&](const TaintRow& r) { return r.bit == bit; });
    if (row != std::end(kTaint))
      flags.push_back({bit, row->letter, row->meaning, row->severity});
    else
      flags.push_back({bit, '?', fmt::format("bit {} (not in this slowburn's table)", bit), CheckState::warn});
  }
  return flags;
}

std::string taint_letters(const std::vector<TaintFlag>& flags) {
  std::string letters;
  for (const TaintFlag& f : flags) letters += f.letter;
  return letters;
}

std::optional<KernelLogLine> parse_kernel_log_line(std::string_view line) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  if (line.empty() || line.front() == ' ' || line.front() == '\t') return std::nullopt;  // kmsg dictionary lines
  size_t semicolon = line.find(';');
  if (semicolon != std::string_view::npos && semicolon < 64)
    if (auto record = parse_kmsg_record(line.substr(0, semicolon), line.substr(semicolon + 1)))
      return record->message.empty() ? std::nullopt : record;  // printk("\n"): a record without a message
  KernelLogLine out;
  // dmesg -r: "<6>[   12.345678] message"
  if (line.size() > 2 && line.front() == '<') {
    size_t close = line.find('>');
    if (close != std::string_view::npos && close <= 4 && all_digits(line.substr(1, close - 1))) {
      if (auto priority = parse_number<uint32_t>(line.substr(1, close - 1)))
        out.level = static_cast<int>(*priority & 7);
      line.remove_prefix(close + 1);
    }
  }
  if (!line.empty() && line.front() == '[') {
    size_t close = line.find(']');
    if (close != std::string_view::npos && close < 40) {
      out.ts_us = seconds_to_us(line.substr(1, close - 1));  // dmesg -T's date is no timestamp: none then
      line.remove_prefix(close + 1);
      if (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    }
  }
  out.message = std::string(trim_right(line));
  if (out.message.empty()) return std::nullopt;
  return out;
}

std::string format_kernel_log_line(const KernelLogLine& line) {
  if (!line.ts_us) return line.message;
  return fmt::format("[{:5}.{:06}] {}", *line.ts_us / 1'000'000, *line.ts_us % 1'000'000, line.message);
}

KernelLogClass classify_kernel_log_message(std::string_view message) {
  if (looks_like_xid_line(message)) return KernelLogClass::xid;
  for (const LogPattern& p : kLogPatterns)
    if (p.at_start ? message.rfind(p.text, 0) == 0 : contains(message, p.text)) return p.cls;
  return KernelLogClass::other;
}

bool is_hard_lockup_message(std::string_view message) { return contains(message, "hard LOCKUP"); }

bool is_uncorrected_machine_check(std::string_view message) {
  return contains_nocase(message, "uncorrected") || contains_nocase(message, "fatal") ||
         contains(message, "Kernel panic");
}

std::optional<double> parse_ib_rate_gbps(std::string_view text) {
  text = trim(text);
  size_t space = text.find(' ');
  if (space == std::string_view::npos || text.substr(space + 1).rfind("Gb/sec", 0) != 0) return std::nullopt;
  std::string number(text.substr(0, space));
  char* end = nullptr;
  double value = std::strtod(number.c_str(), &end);
  if (number.empty() || end != number.c_str() + number.size() || !(value >= 0) || value > 1e6) return std::nullopt;
  return value;
}

std::string parse_ib_state_name(std::string_view text) {
  text = trim(text);
  size_t colon = text.find(':');
  if (colon != std::string_view::npos) text = trim(text.substr(colon + 1));
  return std::string(text);
}

std::optional<std::string> time_daemon_name(std::string_view comm) {
  comm = trim(comm);
  for (const auto& [name, daemon] : kTimeDaemons)
    if (comm == name) return std::string(daemon);
  return std::nullopt;
}

std::optional<std::string> comm_from_stat(std::string_view stat) {
  size_t open = stat.find('(');
  size_t close = stat.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close <= open) return std::nullopt;
  return std::string(stat.substr(open + 1, close - open - 1));
}

}  // namespace slowburn
