// slowburn ib: NCCL's IB transport per rank and per connection (one peer
// each): requests, bytes, latency from post to completion and the
// bandwidth a request achieved, aggregated in the kernel (the polling loop
// never wakes user space), with the connections far slower than the
// job's others flagged.
#include <fmt/format.h>

#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/command.h"
#include "core/format.h"
#include "loader/ncclib_program.h"
#include "loader/privileges.h"
#include "procfs/ranks.h"
#include "rdma/ib_connections.h"
#include "sources/rdma_sources.h"
#include "tools/rdma_tool.h"
#include "trace/trace_session.h"

namespace slowburn::cli {

namespace {

void print_connections(const std::vector<IbConnectionView>& views, bool json, double elapsed_s) {
  if (json) {
    for (const IbConnectionView& v : views) {
      const IbConnectionStats& s = *v.stats;
      nlohmann::json line{{"kind", "ib"},
                          {"pid", s.tgid},
                          {"rank", v.rank ? nlohmann::json(*v.rank) : nlohmann::json(nullptr)},
                          {"direction", ib_direction_name(s.direction)},
                          {"connection", v.index},
                          {"comm", fmt::format("{:#x}", s.comm)},
                          {"requests", s.requests},
                          {"bytes", s.bytes},
                          {"bytes_per_s", elapsed_s > 0 ? static_cast<double>(s.bytes) / elapsed_s : 0.0},
                          {"in_flight_bytes_per_s", v.in_flight_bytes_per_s}};
      line.update(latency_json(v));
      std::cout << line.dump() << '\n';
    }
    std::cout.flush();
    return;
  }
  std::cout << fmt::format("{:>5} {:>8} {:<9} {:>9} {:>10} {:>10} {:>10} {:>8} {:>8} {:>11}\n", "RANK", "PID", "CONN",
                           "REQUESTS", "BYTES", "RATE", "MEAN LAT", "P50<=", "P99<=", "IN-FLIGHT");
  for (const IbConnectionView& v : views) {
    const IbConnectionStats& s = *v.stats;
    std::cout << fmt::format("{:>5} {:>8} {:<9} {:>9} {:>10} {:>10} {:>10} {:>8} {:>8} {:>11}{}\n",
                             v.rank ? std::to_string(*v.rank) : "-", s.tgid, ib_connection_label(v), s.requests,
                             format_bytes(static_cast<double>(s.bytes)),
                             elapsed_s > 0 ? format_bytes_per_s(static_cast<double>(s.bytes) / elapsed_s) : "-",
                             format_ns(v.mean_latency_ns), bound_text(s.latency.quantile_bound(0.5)),
                             bound_text(s.latency.quantile_bound(0.99)), format_bytes_per_s(v.in_flight_bytes_per_s),
                             v.slow ? fmt::format("  < slow (z {:.1f})", *v.z) : "");
  }
  std::cout.flush();
}

}  // namespace

Command add_ib_command(CLI::App& app) {
  auto args = std::make_shared<RdmaToolArgs>();
  auto no_hist = std::make_shared<bool>(false);
  CLI::App* sub = app.add_subcommand(
      "ib",
      "NCCL's IB transport (ncclIbIsend / ncclIbIrecv / ncclIbIflush completed by ncclIbTest) per rank and per "
      "connection: requests, bytes, latency from post to completion (log2 histograms), the bandwidth a request "
      "achieved while in flight; a connection much slower than the job's others of its direction is flagged "
      "(a slow path to that peer). Counted in the kernel: NCCL's polling loop never wakes slowburn. Needs NCCL "
      "2.26-2.28's signatures; another version is reported unsupported.\n\n"
      "Examples:\n  slowburn ib -d 30\n  slowburn ib -p 4242 -i 5\n"
      "  slowburn ib --lib /usr/local/cuda/lib64/libnccl.so.2 --json\n\n"
      "Exit status: 0 the trace ended, 1 an error, 2 nothing to watch (no rank on the node, no NCCL IB "
      "transport loaded).");
  add_rdma_options(sub, *args, true, "ib, status");
  sub->add_flag("--no-hist", *no_hist, "Leave out the latency histograms");
  return {sub, [args, no_hist] {
            if (auto ok = check_tracing_privileges(); !ok) return fail(ok.error());
            auto program = NcclIbProgram::load();
            if (!program) return fail(program.error());
            auto probes = select_probes({"nccl.ib.*"}, ProbeProgram::nccl_ib);
            if (!probes) return fail(probes.error());
            auto sink = make_stdout_sink(args->json);
            auto targets = attach_rdma_probes(
                *args, *probes, "", [&](const ProbeResolution& r, int32_t pid) { return (*program)->attach(r, pid); },
                *sink);
            if (!targets) return fail(targets.error());
            if (targets->attached == 0)
              return fail(nothing_attached(*targets, "NCCL IB",
                                           "trace a job whose NCCL uses the IB/RoCE transport (-p PID of one of its "
                                           "ranks), or attach in its library with --lib PATH/libnccl.so.2"));
            sink->probes_done(targets->attached, targets->pids.size());

            const auto& stop = install_stop_handlers();
            uint64_t start = monotonic_ns();
            uint64_t end = args->duration_s > 0 ? start + static_cast<uint64_t>(args->duration_s * 1e9) : 0;
            uint64_t next = args->interval_s > 0 ? start + static_cast<uint64_t>(args->interval_s * 1e9) : 0;
            auto rank_of = [&](uint32_t pid) { return rank_for(*targets, pid); };
            for (;;) {
              std::this_thread::sleep_for(std::chrono::milliseconds(100));
              uint64_t now = monotonic_ns();
              if (stop.load() || (end && now >= end)) break;
              if (!targets->pids.empty() && std::none_of(targets->pids.begin(), targets->pids.end(), [&](int32_t pid) {
                    return process_alive(args->proc_root, pid);
                  })) {
                sink->note("every traced process has exited");
                break;
              }
              if (next && now >= next) {
                auto stats = (*program)->stats();
                print_connections(analyze_ib_connections(stats, rank_of), args->json,
                                  static_cast<double>(now - start) / 1e9);
                next += static_cast<uint64_t>(args->interval_s * 1e9);
              }
            }
            double elapsed_s = static_cast<double>(monotonic_ns() - start) / 1e9;
            auto stats = (*program)->stats();
            auto views = analyze_ib_connections(stats, rank_of);
            if (views.empty())
              sink->note("no NCCL IB request completed while tracing (the job idle, or using another transport)");
            else
              print_connections(views, args->json, elapsed_s);
            if (!*no_hist)
              for (const HistogramReport& h : ib_histograms(views, targets->rank_of)) sink->histogram(h);
            IbCounters c = (*program)->counters();
            sink->note(
                fmt::format("{} requests posted, {} completed, {} posts deferred (peer not ready), {} "
                            "ncclIbTest polls counted in the kernel; {} completions of requests posted before "
                            "tracing (or evicted), {} requests untracked (table full), {} completions without a "
                            "statistics slot, {} polls lost to threads sharing a slot",
                            c.posts, c.completions, c.posts_deferred, c.polls, c.unknown_done, c.table_full,
                            c.stats_full, c.slot_clashes));
            return 0;
          }};
}

}  // namespace slowburn::cli
