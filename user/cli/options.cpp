#include "cli/options.h"

#include <fmt/format.h>

#include <charconv>
#include <filesystem>
#include <iostream>

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

CLI::Validator seconds(bool positive) {
  return CLI::Validator(
      [positive](std::string& text) -> std::string {
        double value = 0;
        if (!parse_double(text, value) || !(value >= 0) || (positive && value == 0))
          return fmt::format("'{}' is not a number of seconds{} (e.g. 30 or 0.5)", text, positive ? " above 0" : "");
        return "";
      },
      positive ? "SECONDS>0" : "SECONDS");
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
        return fmt::format("{} {} (give / for this machine's tree, or the directory a captured tree was saved to)",
                           text, exists ? "is not a directory" : "does not exist");
      },
      "DIR");
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

int usage_error(const CLI::App& app, const CLI::ParseError& error) {
  const CLI::App* where = chosen(app);
  std::string command = where == &app ? "slowburn" : "slowburn " + where->get_name();
  std::cerr << fmt::format("slowburn: {} (see {} --help)\n", error.what(), command);
  return 1;
}

}  // namespace slowburn::cli
