// slowburn check: can slowburn work here, and what will it miss? One row
// per check: the kernel, BTF, privileges, lockdown, tracefs, a real load
// and attach of slowburn's own programs (ring buffer, uprobes with
// bpf_cookie, multi-uprobe links, a tracepoint), every tracepoint it uses,
// kprobes, where the probes resolve in the ranks, the NVIDIA driver's Xid
// path, RDMA devices and the clock. Replaces `bpftool feature probe`,
// `grep Cap /proc/self/status` and a morning of reading kernel configs.
#include <fmt/format.h>

#include <iostream>

#include "check/checks.h"
#include "cli/command.h"
#include "cli/options.h"

namespace slowburn::cli {

namespace {

struct CheckArgs {
  bool json = false;
  std::vector<int32_t> pids;
  std::string sysfs_root = "/sys";
  std::string proc_root = "/proc";
};

void print_text(const std::vector<CheckRow>& rows, std::ostream& out) {
  out << fmt::format("{:<36} {:<4} {:<8} {}\n", "CHECK", "OK", "REQUIRED", "DETAIL");
  for (const CheckRow& r : rows) {
    out << fmt::format("{:<36} {:<4} {:<8} {}\n", r.check, r.ok() ? "yes" : "no", r.required ? "yes" : "-", r.detail);
    if (!r.ok() && !r.fix.empty()) out << fmt::format("{:<36} {:<4} {:<8} fix: {}\n", "", "", "", r.fix);
  }
  out << check_summary(rows) << '\n';
}

int run_check(const CheckArgs& args) {
  CheckSources sources;
  sources.sysfs_root = args.sysfs_root;
  sources.proc_root = args.proc_root;
  sources.pids = args.pids;
  for (const std::filesystem::path& root : {sources.sysfs_root, sources.proc_root}) {
    std::error_code ec;
    if (!std::filesystem::is_directory(root, ec)) return fail(make_error("{} is not a directory", root.string()));
  }
  std::vector<CheckRow> rows = evaluate_checks(read_check_snapshot(sources));
  if (args.json) {
    for (const CheckRow& r : rows) std::cout << check_row_json(r).dump() << '\n';
  } else {
    print_text(rows, std::cout);
  }
  return any_required_failed(rows) ? kExitCheckFailed : 0;
}

}  // namespace

Command add_check_command(CLI::App& app) {
  auto args = std::make_shared<CheckArgs>();
  CLI::App* sub = app.add_subcommand(
      "check",
      "Can slowburn work here, and what will it miss? One row per check: ok, whether slowburn needs it "
      "(required), what was found and, for what is not ok, the fix. The kernel version, BTF, effective "
      "capabilities, lockdown, perf_event_paranoid, unprivileged_bpf_disabled, the memlock rlimit, tracefs; a "
      "real load and attach of slowburn's own programs on this process (BPF ring buffer, uprobes with bpf_cookie, "
      "a multi-uprobe link, a tracepoint with bpf_cookie); every tracepoint slowburn uses and what is lost "
      "without it; kprobes; where the probes resolve in each rank found (or --pid); the NVIDIA driver and its Xid "
      "path; RDMA devices; the clock's synchronisation (as slowburn health judges it).\n\n"
      "Exit status: 0 when every required row is ok (the rows that are not say what slowburn will miss), 5 when "
      "a required one is not (BTF, capabilities, tracefs, bpf.ringbuf, bpf.uprobe), 1 on an error (a root "
      "directory that does not exist).\n\n"
      "Examples:\n"
      "  slowburn check                                  # this node\n"
      "  slowburn check --json | jq -r 'select(.ok|not) | \"\\(.check): \\(.fix)\"'\n"
      "  slowburn check --pid 4242 --pid 4243            # and where the probes resolve in these processes\n"
      "  sudo -u nobody slowburn check                   # what an unprivileged user would hit\n"
      "  slowburn check --sysfs-root /captured/sys --procfs-root /captured/proc   # a captured tree: files only");
  add_json(sub, args->json, "check (one per check)");
  add_pids(sub, args->pids, "Check the probes in these processes only", "every rank found");
  sub->add_option("--sysfs-root", args->sysfs_root,
                  "sysfs to read (a captured tree: the BPF, rlimit and clock rows are then not tried)")
      ->capture_default_str()
      ->check(root_directory());
  sub->add_option("--procfs-root", args->proc_root, "procfs to read (ranks, capabilities, sysctls)")
      ->capture_default_str()
      ->check(root_directory());
  return {sub, [args] { return run_check(*args); }};
}

}  // namespace slowburn::cli
