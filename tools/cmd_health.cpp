// slowburn health: the node's passive telemetry checklist, one row per
// check and device: GPU Xids (ECC called out), PCIe links and AER, EDAC,
// machine checks, CPU throttling and frequency, NICs, the clock, the
// kernel's taint and log. Counters are read twice, --interval apart, so a
// rising one is seen as a trend. Replaces a morning of `dmesg | grep`,
// `edac-util`, `lspci -vv`, `chronyc tracking` and `cat tainted`.
#include <fmt/format.h>

#include <algorithm>
#include <iostream>

#include "cli/command.h"
#include "cli/options.h"
#include "core/clock.h"
#include "core/format.h"
#include "health/health_run.h"

namespace slowburn::cli {

namespace {

struct HealthArgs {
  bool json = false;
  double interval_s = 1.0;
  std::string sysfs_root = "/sys";
  std::string proc_root = "/proc";
  std::string kmsg;
  std::vector<std::string> expect;
  double nic_speed_gbps = 0;
};

std::string value_text(const nlohmann::json& v, const std::string& unit) {
  if (v.is_null()) return "-";
  if (v.is_string()) return v.get<std::string>();
  std::string number = v.is_number_float() ? fmt::format("{:g}", v.get<double>()) : v.dump();
  return unit.empty() ? number : number + " " + unit;
}

void print_text(const std::vector<CheckRow>& checks, std::ostream& out) {
  // The RANKS column as wide as its longest list (a node of 8 ranks: "0-7"
  // or "0,2,4,6"), so DETAIL stays in its column.
  size_t ranks_width = 7;
  for (const CheckRow& c : checks) ranks_width = std::max(ranks_width, format_rank_list(c.ranks).size());
  out << fmt::format("{:<27} {:<13} {:<11} {:<12} {:<12} {:<{}} {}\n", "CHECK", "DEVICE", "STATE", "VALUE", "THRESHOLD",
                     "RANKS", ranks_width, "DETAIL");
  for (const CheckRow& c : checks)
    out << fmt::format("{:<27} {:<13} {:<11} {:<12} {:<12} {:<{}} {}\n", c.check, c.device.empty() ? "-" : c.device,
                       check_state_name(c.state), value_text(c.value, c.unit), value_text(c.threshold, c.unit),
                       c.ranks.empty() ? "-" : format_rank_list(c.ranks), ranks_width, c.detail);
  out << health_summary(checks) << '\n';
  if (auto sdc = sdc_activity(checks)) out << *sdc << '\n';
}

void print_json(const std::vector<CheckRow>& checks, std::ostream& out) {
  std::string host = hostname();
  double ts = unix_now_s();
  for (const CheckRow& c : checks) {
    nlohmann::json line = health_check_json(c);
    line["ts"] = ts;
    line["host"] = host;
    out << line.dump() << '\n';
  }
}

int run_health(const HealthArgs& args) {
  if (auto ok = check_sysfs_tree(args.sysfs_root); !ok) return fail(ok.error());
  HealthRunOptions options;
  options.sources.sysfs_root = args.sysfs_root;
  options.sources.proc_root = args.proc_root;
  if (!args.kmsg.empty()) options.sources.kmsg_file = args.kmsg;
  options.interval_s = args.interval_s;
  for (const std::string& rule : args.expect) {
    auto parsed = parse_expectation_rule(rule);
    if (!parsed) return fail(parsed.error());
    options.link_rules.push_back(*parsed);
  }
  if (args.nic_speed_gbps > 0) options.nic_speed_gbps = args.nic_speed_gbps;
  auto checks = run_health_checklist(options);
  if (!checks) return fail(checks.error());
  if (args.json)
    print_json(*checks, std::cout);
  else
    print_text(*checks, std::cout);
  return any_failed(*checks) ? kExitHealthFailed : 0;
}

}  // namespace

Command add_health_command(CLI::App& app) {
  auto args = std::make_shared<HealthArgs>();
  CLI::App* sub = app.add_subcommand(
      "health",
      "The node's passive telemetry checklist, one row per check and device: value, threshold, state (ok, warn, "
      "fail, or unavailable with the reason) and the ranks it concerns. GPU Xids since boot by class (ECC and row "
      "remapping called out), GPU/NIC PCIe links against what they can do, AER counters, EDAC corrected and "
      "uncorrected counts per memory controller and DIMM, machine-check tracepoints and log lines, CPU thermal "
      "throttling, governor, frequency, offline CPUs and SMT, NIC links, speeds, errors and PFC, the clock's "
      "synchronisation and time daemons, the kernel's taint flags, oopses, hung tasks and lockups. Counters are "
      "read twice, --interval apart: a rise is a trend (EDAC ue: fail; EDAC ce, throttling, AER correctable: "
      "warn). Needs no BPF; root reads /dev/kmsg where kernel.dmesg_restrict is set.\n\n"
      "Exit status: 0 when no check fails (warn alone included), 4 when any check is in state fail, 1 on an "
      "error (a root directory that does not exist, an unreadable --kmsg file).\n\n"
      "Examples:\n"
      "  slowburn health                                   # this node, counters 1 s apart\n"
      "  slowburn health -i 10 --json | jq 'select(.state!=\"ok\")'\n"
      "  slowburn health --sysfs-root /captured/sys --procfs-root /captured/proc --kmsg /captured/dmesg.txt\n"
      "  slowburn health --expect '10de:*=x16@32' --nic-speed 400   # hold GPUs to x16 Gen5, NICs to 400 Gb/s\n"
      "  slowburn health --json -i 0 || echo \"node failed a check (exit $?)\"");
  add_json(sub, args->json, "health (one per check and device)");
  add_interval(sub, args->interval_s, "the two readings of the counters", "one reading, no trends");
  sub->add_option("--sysfs-root", args->sysfs_root, "sysfs to read (a captured tree)")
      ->capture_default_str()
      ->check(root_directory());
  sub->add_option("--procfs-root", args->proc_root, "procfs to read (ranks, taint, time daemons)")
      ->capture_default_str()
      ->check(root_directory());
  sub->add_option("--kmsg", args->kmsg,
                  "A captured kernel log (/dev/kmsg records or `dmesg` text) instead of this machine's /dev/kmsg; "
                  "without it a replayed tree's kernel-log checks are unavailable")
      ->check(kernel_log_file());
  sub->add_option("--expect", args->expect,
                  "Expected PCIe link, SELECTOR=xWIDTH@SPEED as in `slowburn pcie` (default: what both ends can do)");
  sub->add_option("--nic-speed", args->nic_speed_gbps,
                  "Gb/s every NIC port should run at (default: the fastest port of the same model on this node)")
      ->check(CLI::PositiveNumber);
  return {sub, [args] { return run_health(*args); }};
}

}  // namespace slowburn::cli
