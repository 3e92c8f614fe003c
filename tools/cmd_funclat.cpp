// slowburn funclat: per-process log2 latency histograms of any function, the
// bpftrace one-liner
//   uprobe:LIB:SYM { @s[tid] = nsecs } uretprobe:LIB:SYM /@s[tid]/ { @[pid] = hist(nsecs - @s[tid]); }
// as bcc's funclatency, counted in the kernel (no record per call).
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <thread>

#include "cli/command.h"
#include "cli/options.h"
#include "core/strings.h"
#include "loader/attach_probes.h"
#include "loader/callpair_program.h"
#include "loader/privileges.h"
#include "probes/resolver.h"
#include "procfs/ranks.h"
#include "trace/trace_session.h"

namespace slowburn::cli {

namespace {

struct FunclatArgs {
  std::vector<std::string> functions;  // LIB:SYMBOL
  int32_t pid = 0;
  double duration_s = 0;
  double interval_s = 0;
  bool nsecs = false;
  bool msecs = false;
  bool json = false;
  std::string proc_root = "/proc";
};

struct Target {
  ProbeSpec spec;
  ProbeResolution where;
};

Result<std::vector<Target>> resolve_targets(const FunclatArgs& args, SymbolCache& cache) {
  std::vector<Target> targets;
  targets.reserve(args.functions.size());  // ProbeResolution points at its spec
  std::vector<MapEntry> maps;
  if (args.pid) {
    auto read = read_process_maps(args.proc_root, args.pid);
    if (!read) return make_error("{} (has pid {} exited?)", read.error().message, args.pid);
    maps = std::move(*read);
  }
  for (size_t i = 0; i < args.functions.size(); ++i) {
    const std::string& text = args.functions[i];
    size_t colon = text.find(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == text.size())
      return make_error("'{}' is not LIB:SYMBOL (e.g. /usr/lib/x86_64-linux-gnu/libmpi.so.40:MPI_Allreduce)", text);
    std::string library = text.substr(0, colon);
    std::string symbol = text.substr(colon + 1);
    Target& t = targets.emplace_back();
    t.spec.id = static_cast<uint16_t>(kFirstDynamicProbeId + i);
    t.spec.name = symbol;
    t.spec.kind = CallKind::function;
    if (library.find('/') != std::string::npos) {
      t.spec.targets = {{std::filesystem::path(library).filename().string(), {symbol}, ""}};
      t.where = resolve_in_file(t.spec, library, cache);
    } else if (args.pid) {
      t.spec.targets = {{soname_stem(library), {symbol}, ""}};
      t.where = resolve_in_process(t.spec, args.proc_root, args.pid, maps, cache);
    } else {
      auto file = find_library_file(library);
      if (!file) return file.error();
      t.spec.targets = {{std::filesystem::path(*file).filename().string(), {symbol}, ""}};
      t.where = resolve_in_file(t.spec, *file, cache);
    }
    t.where.spec = &t.spec;
    if (!t.where.resolved) return make_error("{}: {}", text, t.where.reason);
  }
  return targets;
}

void print_histograms(CallpairProgram& program, const std::vector<Target>& targets, const FunclatArgs& args,
                      const std::string& unit, Sink& sink, bool reset) {
  std::map<uint32_t, const Target*> by_id;
  for (const Target& t : targets) by_id[t.spec.id] = &t;
  auto hists = reset ? program.take_histograms(unit) : program.histograms(unit);
  std::sort(hists.begin(), hists.end(), [](const KernelHistogram& a, const KernelHistogram& b) {
    return std::tie(a.probe_id, a.tgid) < std::tie(b.probe_id, b.tgid);
  });
  for (KernelHistogram& h : hists) {
    HistogramReport report;
    report.pid = static_cast<int32_t>(h.tgid);
    if (auto rank = read_rank(args.proc_root, report.pid)) report.rank = *rank;
    auto it = by_id.find(h.probe_id);
    report.probe = it != by_id.end() ? it->second->spec.name : fmt::format("probe {}", h.probe_id);
    report.hist = std::move(h.hist);
    report.total_ns = h.total_ns;
    sink.histogram(report);
  }
}

int run_funclat(const FunclatArgs& args) {
  if (auto ok = check_tracing_privileges(); !ok) return fail(ok.error());
  SymbolCache cache;
  auto targets = resolve_targets(args, cache);
  if (!targets) return fail(targets.error());

  CallpairConfig config;
  config.emit_records = false;
  config.target_tgid = static_cast<uint32_t>(args.pid);
  config.hist_unit_ns = args.nsecs ? 1 : args.msecs ? 1'000'000 : 1000;
  config.ringbuf_bytes = 4096;  // unused without records; the map must still exist
  std::string unit = args.nsecs ? "nsecs" : args.msecs ? "msecs" : "usecs";
  auto program = CallpairProgram::load(config);
  if (!program) return fail(program.error());

  auto sink = make_stdout_sink(args.json);
  std::vector<ProbeResolution> resolutions;
  for (const Target& t : *targets) resolutions.push_back(t.where);
  for (const ProbeStatus& status : attach_probes(**program, args.pid, std::nullopt, resolutions)) {
    if (status.state != ProbeState::attached) return fail(make_error("{}: {}", status.probe, status.detail));
    sink->probe_status(status);
  }
  sink->probes_done(targets->size(), args.pid ? 1 : 0);

  const auto& stop = install_stop_handlers();
  auto start = std::chrono::steady_clock::now();
  auto next_interval = start + std::chrono::duration<double>(args.interval_s);
  while (!stop.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto now = std::chrono::steady_clock::now();
    if (args.duration_s > 0 && now - start >= std::chrono::duration<double>(args.duration_s)) break;
    if (args.interval_s > 0 && now >= next_interval) {
      print_histograms(**program, *targets, args, unit, *sink, true);
      next_interval += std::chrono::duration<double>(args.interval_s);
    }
    if (args.pid && !process_alive(args.proc_root, args.pid)) {
      sink->note(fmt::format("pid {} exited", args.pid));
      break;
    }
  }
  print_histograms(**program, *targets, args, unit, *sink, false);
  CallpairCounters counters = (*program)->counters();
  if (counters.orphan_returns || counters.state_failures)
    sink->note(
        fmt::format("{} returns without a traced entry (attached mid-call), {} entries not tracked "
                    "(thread-state map full)",
                    counters.orphan_returns, counters.state_failures));
  return 0;
}

}  // namespace

Command add_funclat_command(CLI::App& app) {
  auto args = std::make_shared<FunclatArgs>();
  CLI::App* sub = app.add_subcommand(
      "funclat",
      "Per-process log2 latency histogram of functions (bcc funclatency, the bpftrace uprobe/uretprobe hist() "
      "one-liner), aggregated in the kernel.\n\nExamples:\n"
      "  slowburn funclat /usr/lib/x86_64-linux-gnu/libmpi.so.40:MPI_Allreduce\n"
      "  slowburn funclat -p 4242 -i 5 mpi:MPI_Barrier\n"
      "  slowburn funclat 'libnccl.so.2:ncclIbTest(void*, int*, int*)' -m\n"
      "  slowburn funclat -d 10 --json c:malloc\n\n"
      "Exit status: 0 the trace ended, 1 an error (no such library or symbol, a probe that cannot attach).");
  sub->add_option("functions", args->functions,
                  "LIB:SYMBOL; LIB a path or a name (mpi, libmpi.so.40); C++ "
                  "names mangled or demangled")
      ->required();
  add_pid(sub, args->pid, "Trace only this process");
  add_duration(sub, args->duration_s, "trace");
  add_interval(sub, args->interval_s, "histograms, each reset after it is printed", "at the end only");
  auto* ns = sub->add_flag("-n,--nanoseconds", args->nsecs, "Histogram in nanoseconds");
  sub->add_flag("-m,--milliseconds", args->msecs, "Histogram in milliseconds")->excludes(ns);
  add_json(sub, args->json, "hist");
  sub->add_option("--procfs-root", args->proc_root, "procfs to read (a captured tree)")
      ->capture_default_str()
      ->check(root_directory());
  return {sub, [args] { return run_funclat(*args); }};
}

}  // namespace slowburn::cli
