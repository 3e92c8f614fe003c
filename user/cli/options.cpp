#include "cli/options.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <iostream>

#include "core/strings.h"

namespace slowburn::cli {

namespace {

bool parse_double(const std::string& text, double& value) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size();
}

// The deepest subcommand that was chosen: where the bad option belongs.
const CLI::App* chosen(const CLI::App& app) {
  for (const CLI::App* sub : app.get_subcommands())
    if (sub->parsed()) return chosen(*sub);
  return &app;
}

}  // namespace

CLI::Validator seconds(bool positive, double min_s, double max_s) {
  return CLI::Validator(
      [positive, min_s, max_s](std::string& text) -> std::string {
        double value = 0;
        if (!parse_double(text, value) || !(value >= 0) || (positive && value == 0))
          return fmt::format("'{}' is not a number of seconds{} (e.g. 30 or 0.5)", text, positive ? " above 0" : "");
        if (value < min_s) return fmt::format("'{}' seconds is too short: at least {}", text, min_s);
        if (value > max_s && max_s < kMostSeconds)
          return fmt::format("'{}' seconds is more than an interval may be: at most {:.0f}", text, max_s);
        if (value > kMostSeconds)
          return fmt::format("'{}' seconds is more than slowburn waits: at most {:.0f} (~115 days){}", text,
                             kMostSeconds, positive ? "" : "; without -d it runs until stopped (Ctrl-C, SIGTERM)");
        return "";
      },
      positive ? "SECONDS>0" : "SECONDS");
}

CLI::Option* add_duration(CLI::App* sub, double& seconds_value, const std::string& verb, const std::string& until) {
  return sub
      ->add_option("-d,--duration", seconds_value, fmt::format("Seconds to {} (0 or left out: until {})", verb, until))
      ->check(seconds());
}

CLI::Option* add_bounded_duration(CLI::App* sub, double& seconds_value, const std::string& verb) {
  return sub->add_option("-d,--duration", seconds_value, fmt::format("Seconds to {}", verb))
      ->check(seconds(true))
      ->capture_default_str();
}

CLI::Option* add_interval(CLI::App* sub, double& seconds_value, const std::string& what, const std::string& zero,
                          double min_s) {
  std::string text = fmt::format("Seconds between {}", what);
  if (!zero.empty()) text += fmt::format(" (0: {})", zero);
  // An interval over an hour is a mistake in every command (a table, a
  // poll, a second reading an hour away or more).
  constexpr double kMostIntervalSeconds = 3600;
  return sub->add_option("-i,--interval", seconds_value, text)
      ->check(seconds(zero.empty(), min_s, kMostIntervalSeconds))
      ->capture_default_str();
}

CLI::Option* add_pids(CLI::App* sub, std::vector<int32_t>& pids, const std::string& what,
                      const std::string& by_default) {
  std::string text = by_default.empty() ? fmt::format("{} (repeatable)", what)
                                        : fmt::format("{} (repeatable; default: {})", what, by_default);
  return sub->add_option("-p,--pid", pids, text)->check(process_id());
}

CLI::Option* add_pid(CLI::App* sub, int32_t& pid, const std::string& what) {
  return sub->add_option("-p,--pid", pid, what)->check(process_id());
}

CLI::Option* add_json(CLI::App* sub, bool& json, const std::string& kinds) {
  return sub->add_flag("--json", json,
                       fmt::format("JSON lines, one object a line (kind: {}; docs/json-lines.md)", kinds));
}

CLI::Validator above_zero(const std::string& example) {
  return CLI::Validator(
      [example](std::string& text) -> std::string {
        double value = 0;
        if (!parse_double(text, value) || !(value > 0) || !std::isfinite(value))
          return fmt::format("'{}' is not a number above 0 (e.g. {})", text, example);
        return "";
      },
      "NUMBER>0");
}

CLI::Validator kernel_log_file() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        std::error_code ec;
        auto status = std::filesystem::status(text, ec);
        if (ec || !std::filesystem::exists(status))
          return fmt::format("{} does not exist: give a captured kernel log (e.g. dmesg > kmsg.txt)", text);
        if (std::filesystem::is_directory(status))
          return fmt::format("{} is a directory: give a captured kernel log file (e.g. dmesg > kmsg.txt)", text);
        return "";
      },
      "FILE");
}

CLI::Validator process_id() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        int64_t pid = 0;
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), pid);
        if (ec != std::errc() || end != text.data() + text.size() || pid <= 0 || pid > INT32_MAX)
          return fmt::format("'{}' is not a process id (a positive number; slowburn ranks lists the ranks)", text);
        return "";
      },
      "PID");
}

CLI::Validator root_directory() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        std::error_code ec;
        if (std::filesystem::is_directory(text, ec)) return "";
        bool exists = std::filesystem::exists(text, ec);
        return fmt::format(
            "{} {} (this machine's trees are /sys and /proc; or give the directory a captured /sys or /proc was "
            "saved to)",
            text, exists ? "is not a directory" : "does not exist");
      },
      "DIR");
}

Result<void> check_sysfs_tree(const std::string& sysfs_root) {
  std::error_code ec;
  if (sysfs_root == "/sys" || std::filesystem::is_directory(std::filesystem::path(sysfs_root) / "bus/pci/devices", ec))
    return {};
  return make_error(
      "--sysfs-root {} has no bus/pci/devices: not a sysfs tree (give the directory a /sys was captured to, or "
      "leave --sysfs-root out on a live machine: its tree is /sys)",
      sysfs_root);
}

void add_node_source_options(CLI::App* sub, NodeSourcesOptions& node) {
  sub->add_option("--procfs-root", node.roots.proc_root, "procfs to read ranks from (a captured tree)")
      ->capture_default_str()
      ->check(root_directory());
  sub->add_option("--sysfs-root", node.roots.sysfs_root,
                  "sysfs for the PCIe topology, the link/AER pollers and the NIC counters")
      ->capture_default_str()
      ->check(root_directory());
  sub->add_flag("!--no-hardware", node.hardware, "Leave out Xid, AER and PCIe link events");
  sub->add_flag("!--no-rdma", node.rdma,
                "Leave out the RDMA path: NIC counters, and in a trace QP errors (libibverbs) and NCCL IB "
                "per-connection latency");
  sub->add_flag("!--no-host", node.host,
                "Leave out the host's side: time off the CPU and who ran instead (sched tracepoints), cgroup "
                "throttling, memory and pressure");
}

std::optional<int> before_parse(const CLI::App& app, int argc, const char* const* argv) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands({})) {
    names.push_back(sub->get_name());
    for (const std::string& alias : sub->get_aliases()) names.push_back(alias);
  }
  auto known = [&](const std::string& word) { return std::find(names.begin(), names.end(), word) != names.end(); };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-v" || arg == "--verbose") continue;
    if (arg == "-h" || arg == "--help" || arg == "--help-all" || arg == "--version") return std::nullopt;
    if (arg.starts_with("-")) {
      std::cerr << fmt::format(
          "slowburn: unknown option {} (before the command, only -v, --version and --help; "
          "see slowburn --help)\n",
          arg);
      return 1;
    }
    if (arg == "help") {
      std::string what = i + 1 < argc ? argv[i + 1] : "";
      if (what.empty()) {
        std::cout << app.help();
        return 0;
      }
      if (!known(what)) {
        auto near = closest_match(what, names);
        std::cerr << fmt::format("slowburn: no command {}{} (see slowburn --help)\n", what,
                                 near ? fmt::format("; did you mean {}?", *near) : "");
        return 1;
      }
      std::cout << app.get_subcommand(what)->help();
      return 0;
    }
    if (known(arg)) return std::nullopt;
    auto near = closest_match(arg, names);
    std::cerr << fmt::format("slowburn: unknown command {}{} (see slowburn --help for the commands)\n", arg,
                             near ? fmt::format("; did you mean {}?", *near) : "");
    return 1;
  }
  return std::nullopt;
}

int usage_error(const CLI::App& app, const CLI::ParseError& error) {
  const CLI::App* where = chosen(app);
  std::string command = where == &app ? "slowburn" : "slowburn " + where->get_name();
  std::cerr << fmt::format("slowburn: {} (see {} --help)\n", error.what(), command);
  return 1;
}

}  // namespace slowburn::cli
