// slowburn gpuirq: GPU interrupt rate and handler latency per IRQ, from the
// irq tracepoints filtered to handlers named "nvidia" in the kernel (and
// the driver's ISR through kprobes where the kernel has them).
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <thread>

#include "cli/command.h"
#include "cli/options.h"
#include "core/format.h"
#include "loader/gpuirq_program.h"
#include "loader/privileges.h"
#include "trace/trace_session.h"

namespace slowburn::cli {

namespace {

struct GpuIrqArgs {
  double duration_s = 0;
  double interval_s = 0;
  std::string name_prefix = "nvidia";
  std::string isr_symbol = "nvidia_isr";
  bool json = false;
  std::string sysfs_root = "/sys";
  std::string proc_root = "/proc";
};

// Whether /proc/interrupts lists a handler with this prefix at all.
bool interrupts_listed(const std::string& proc_root, const std::string& prefix) {
  std::ifstream in(proc_root + "/interrupts");
  std::string line;
  while (std::getline(in, line)) {
    size_t last = line.find_last_of(' ');
    if (last != std::string::npos && line.compare(last + 1, prefix.size(), prefix) == 0) return true;
  }
  return false;
}

// Returns how many interrupt lines had a count.
size_t report(GpuIrqProgram& program, double elapsed_s, Sink& sink) {
  size_t lines = 0;
  for (IrqHistogram& h : program.histograms()) {
    ++lines;
    HistogramReport r;
    uint64_t count = h.hist.count();
    r.probe = fmt::format("irq {} {} ({}: {:.1f}/s)", h.irq, h.name.empty() ? "?" : h.name, h.source,
                          elapsed_s > 0 ? static_cast<double>(count) / elapsed_s : 0.0);
    r.hist = std::move(h.hist);
    r.total_ns = h.total_ns;
    sink.histogram(r);
  }
  return lines;
}

int run_gpuirq(const GpuIrqArgs& args) {
  if (auto ok = check_tracing_privileges(); !ok) return fail(ok.error());
  GpuIrqOptions options;
  options.name_prefix = args.name_prefix;
  options.isr_symbol = args.isr_symbol;
  options.sysfs_root = args.sysfs_root;
  options.proc_root = args.proc_root;
  auto program = GpuIrqProgram::load_and_attach(options);
  if (!program) return fail(program.error());
  auto sink = make_stdout_sink(args.json);
  ProbeStatus tracepoints{"nvidia.irq",
                          std::nullopt,
                          0,
                          ProbeState::attached,
                          fmt::format("irq:irq_handler_entry/exit, handlers named {}*", args.name_prefix),
                          {},
                          {}};
  sink->probe_status(tracepoints);
  ProbeStatus kprobes{
      "nvidia.isr", std::nullopt, 0, ProbeState::attached, "kprobe/kretprobe " + args.isr_symbol, {}, {}};
  if ((*program)->kprobe_unavailable()) {
    kprobes.state = ProbeState::unavailable;
    kprobes.library.clear();
    kprobes.detail = *(*program)->kprobe_unavailable();
  }
  sink->probe_status(kprobes);
  sink->probes_done(1, 0);
  if (!interrupts_listed(args.proc_root, args.name_prefix))
    return fail(nothing_to_watch(
        "nothing to watch: no interrupt handler named {}* in {}/interrupts: no NVIDIA GPU or driver here "
        "(--name-prefix names another handler)",
        args.name_prefix, args.proc_root));

  const auto& stop = install_stop_handlers();
  auto start = std::chrono::steady_clock::now();
  auto last_report = start;
  while (!stop.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto now = std::chrono::steady_clock::now();
    if (args.duration_s > 0 && now - start >= std::chrono::duration<double>(args.duration_s)) break;
    if (args.interval_s > 0 && now - last_report >= std::chrono::duration<double>(args.interval_s)) {
      report(**program, std::chrono::duration<double>(now - start).count(), *sink);
      last_report = now;
    }
  }
  double elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Silence would read as "not traced": say that nothing fired (seen on an H200 running NCCL: the
  // driver raised no interrupt on its handler in 4 s while the job ran).
  if (report(**program, elapsed_s, *sink) == 0)
    sink->note(fmt::format("0 interrupts from handlers named {}* in {:.1f} s", args.name_prefix, elapsed_s));
  return 0;
}

}  // namespace

Command add_gpuirq_command(CLI::App& app) {
  auto args = std::make_shared<GpuIrqArgs>();
  CLI::App* sub = app.add_subcommand(
      "gpuirq",
      "GPU interrupt rate and handler latency per IRQ (log2 histograms in ns), filtered in the kernel to handlers "
      "named nvidia*. A GPU whose interrupt rate collapses or whose handler latency grows shows here first.\n\n"
      "Examples:\n  slowburn gpuirq -d 10\n  slowburn gpuirq -i 5 --json\n"
      "  slowburn gpuirq --name-prefix mlx5 -d 10   # a NIC's completion interrupts instead\n\n"
      "Exit status: 0 the trace ended, 1 an error, 2 nothing to watch (no handler with that name).");
  add_duration(sub, args->duration_s, "trace");
  add_interval(sub, args->interval_s, "histograms, cumulative", "at the end only");
  sub->add_option("--name-prefix", args->name_prefix, "Interrupt handler name prefix")->capture_default_str();
  sub->add_option("--isr-symbol", args->isr_symbol,
                  "Kernel function the kprobe pair times, an interrupt handler f(int irq, void *) "
                  "(another than nvidia_isr checks the kprobe path on a node without the driver)")
      ->capture_default_str();
  add_json(sub, args->json, "hist, status");
  sub->add_option("--sysfs-root", args->sysfs_root, "sysfs to check kprobe support in")
      ->capture_default_str()
      ->check(root_directory());
  sub->add_option("--procfs-root", args->proc_root, "procfs for /proc/interrupts and /proc/kallsyms")
      ->capture_default_str()
      ->check(root_directory());
  return {sub, [args] { return run_gpuirq(*args); }};
}

}  // namespace slowburn::cli
