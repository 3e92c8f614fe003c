// slowburn qp: RDMA queue pairs of the traced processes from libibverbs'
// control path: creation, every state transition (with the peer's QPN and
// GID once connected), destruction, and asynchronous events. A QP moved to
// ERR or SQE, a failed transition and a QP_FATAL / PORT_ERR / DEVICE_FATAL
// are events naming the process, its rank and its NIC. From the first QP
// seen in a process, its data path too: each QP's send completion latency
// (sources/verbs_data_path.h), a QP far slower than the others an event.
#include <fmt/format.h>

#include <chrono>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "cli/command.h"
#include "core/format.h"
#include "events/decoder.h"
#include "loader/privileges.h"
#include "loader/ring_buffer.h"
#include "loader/verbs_program.h"
#include "procfs/ranks.h"
#include "rdma/ib_connections.h"
#include "rdma/qp_inventory.h"
#include "rdma/verbs_names.h"
#include "sources/device_events.h"
#include "sources/verbs_data_path.h"
#include "sysfs/topology.h"
#include "tools/rdma_tool.h"
#include "trace/trace_session.h"

namespace slowburn::cli {

namespace {

void print_inventory(const QpInventory& inventory, const RdmaTargets& targets, bool json) {
  auto rank_text = [&](uint32_t pid) {
    auto rank = rank_for(targets, pid);
    return rank ? std::to_string(*rank) : std::string("-");
  };
  if (json) {
    for (const QpInfo& q : inventory.qps()) {
      auto rank = rank_for(targets, q.pid);
      std::cout << nlohmann::json{{"kind", "qp"},
                                  {"pid", q.pid},
                                  {"rank", rank ? nlohmann::json(*rank) : nlohmann::json(nullptr)},
                                  {"nic", q.device},
                                  {"qp_num", q.qp_num},
                                  {"type", q.type_known ? qp_type_name(q.qp_type) : ""},
                                  {"state", qp_state_name(q.state)},
                                  {"transitions", q.transitions},
                                  {"failed_modifies", q.failed_modifies},
                                  {"dest_qp_num",
                                   q.dest_qp_num ? nlohmann::json(q.dest_qp_num) : nlohmann::json(nullptr)},
                                  {"dest_gid", gid_is_zero(q.dest_gid) ? nlohmann::json(nullptr)
                                                                       : nlohmann::json(format_gid(q.dest_gid))},
                                  {"dest_lid", q.dest_lid},
                                  {"created_before_tracing", q.created_ns == 0}}
                       .dump()
                << '\n';
    }
    for (const auto& [pid, t] : inventory.totals())
      std::cout << nlohmann::json{{"kind", "qp_totals"},
                                  {"pid", pid},
                                  {"created", t.created},
                                  {"destroyed", t.destroyed},
                                  {"error_transitions", t.error_transitions},
                                  {"failed_calls", t.failed_calls},
                                  {"async_errors", t.async_errors}}
                       .dump()
                << '\n';
    return;
  }
  auto qps = inventory.qps();
  std::cout << fmt::format("\n{} live QP(s)\n", qps.size());
  if (!qps.empty())
    std::cout << fmt::format("{:>8} {:>5} {:<8} {:>8} {:<5} {:<6} {:>5} {:>9} {}\n", "PID", "RANK", "NIC", "QPN",
                             "TYPE", "STATE", "MOVES", "PEER QPN", "PEER GID / LID");
  for (const QpInfo& q : qps)
    std::cout << fmt::format("{:>8} {:>5} {:<8} {:>#8x} {:<5} {:<6} {:>5} {:>9} {}\n", q.pid, rank_text(q.pid),
                             q.device.empty() ? "-" : q.device, q.qp_num, q.type_known ? qp_type_name(q.qp_type) : "?",
                             qp_state_name(q.state), q.transitions,
                             q.dest_qp_num ? fmt::format("{:#x}", q.dest_qp_num) : "-",
                             !gid_is_zero(q.dest_gid) ? format_gid(q.dest_gid)
                             : q.dest_lid             ? fmt::format("lid {}", q.dest_lid)
                                                      : "-");
  if (!inventory.totals().empty())
    std::cout << fmt::format("\n{:>8} {:>5} {:>8} {:>10} {:>11} {:>7} {:>12}\n", "PID", "RANK", "CREATED", "DESTROYED",
                             "ERR/SQE", "FAILED", "ASYNC ERRS");
  for (const auto& [pid, t] : inventory.totals())
    std::cout << fmt::format("{:>8} {:>5} {:>8} {:>10} {:>11} {:>7} {:>12}\n", pid, rank_text(pid), t.created,
                             t.destroyed, t.error_transitions, t.failed_calls, t.async_errors);
}

// Each QP's send completions (the data path), beside the live QPs' table.
// Each QP's NIC as last seen (destroyed QPs' too: QpInventory::last_known).
void print_latencies(const std::vector<IbConnectionView>& views, const QpInventory& inventory,
                     const RdmaTargets& targets, bool json) {
  auto nic_of = [&](uint32_t pid, uint64_t qp_num) {
    auto q = inventory.last_known(pid, static_cast<uint32_t>(qp_num));
    return q ? q->device : std::string();
  };
  if (json) {
    for (const IbConnectionView& v : views) {
      const IbConnectionStats& s = *v.stats;
      std::string nic = nic_of(s.tgid, s.comm);
      nlohmann::json line{{"kind", "qp_latency"},
                          {"pid", s.tgid},
                          {"rank", v.rank ? nlohmann::json(*v.rank) : nlohmann::json(nullptr)},
                          {"qp_num", s.comm},
                          {"nic", nic.empty() ? nlohmann::json(nullptr) : nlohmann::json(nic)},
                          {"sends", s.requests},
                          {"errors", s.errors}};
      line.update(latency_json(v));
      std::cout << line.dump() << '\n';
    }
    return;
  }
  if (views.empty()) return;
  std::cout << fmt::format("\n{} QP(s) with send completions timed (post to completion)\n", views.size());
  std::cout << fmt::format("{:>8} {:>5} {:<8} {:>8} {:>8} {:>7} {:>10} {:>9} {:>9}\n", "PID", "RANK", "NIC", "QPN",
                           "SENDS", "ERRORS", "MEAN LAT", "P50<=", "P99<=");
  for (const IbConnectionView& v : views) {
    const IbConnectionStats& s = *v.stats;
    auto rank = rank_for(targets, s.tgid);
    std::string nic = nic_of(s.tgid, s.comm);
    std::cout << fmt::format("{:>8} {:>5} {:<8} {:>#8x} {:>8} {:>7} {:>10} {:>9} {:>9}{}\n", s.tgid,
                             rank ? std::to_string(*rank) : "-", nic.empty() ? "-" : nic, s.comm, s.requests, s.errors,
                             format_ns(v.mean_latency_ns), bound_text(s.latency.quantile_bound(0.5)),
                             bound_text(s.latency.quantile_bound(0.99)),
                             v.slow ? fmt::format("  < slow (z {:.1f})", *v.z) : "");
  }
}

std::string data_path_status_text(const ProbeStatus& s) {
  if (s.state == ProbeState::attached && s.sites.size() == 2)
    return fmt::format("pid {}: its data path traced in {} (post_send {:#x}, poll_cq {:#x})", s.pid, s.library,
                       s.sites[0].file_offset, s.sites[1].file_offset);
  return fmt::format("pid {}: its data path not traced: {}", s.pid, s.detail);
}

}  // namespace

Command add_qp_command(CLI::App& app) {
  auto args = std::make_shared<RdmaToolArgs>();
  CLI::App* sub = app.add_subcommand(
      "qp",
      "RDMA queue pairs from libibverbs' control path (ibv_create_qp, ibv_modify_qp, ibv_destroy_qp, "
      "ibv_get_async_event): every QP with its NIC, state and peer, and as events: a QP moved to ERR or SQE, a "
      "transition that failed, QP_FATAL / PORT_ERR / DEVICE_FATAL. By default system-wide in this host's "
      "libibverbs.so.1 (processes started later included); a container's job maps its own copy: use -p. From the "
      "first QP seen in a process, its provider's post_send and poll_cq are probed too (found through the QP's "
      "context): each QP's send completion latency, and a QP far slower than the others as an event "
      "(rdma.slow_qp).\n\n"
      "Examples:\n  slowburn qp\n  slowburn qp -p 4242 -d 60 --json\n"
      "  slowburn qp --lib /opt/conda/lib/libibverbs.so.1\n\n"
      "Exit status: 0 the trace ended, 1 an error, 2 nothing to watch (no libibverbs, no rank, nothing "
      "attached).");
  add_rdma_options(sub, *args, false, "qp, qp_totals, qp_latency, event, status");
  return {sub, [args] {
            if (auto ok = check_tracing_privileges(); !ok) return fail(ok.error());
            auto program = VerbsProgram::load();
            if (!program) return fail(program.error());
            auto probes = select_probes({"verbs.*"}, ProbeProgram::verbs);
            if (!probes) return fail(probes.error());
            auto sink = make_stdout_sink(args->json);
            auto targets = attach_rdma_probes(
                *args, *probes, "libibverbs.so.1",
                [&](const ProbeResolution& r, int32_t pid) { return (*program)->attach(r, pid); }, *sink);
            if (!targets) return fail(targets.error());
            if (targets->attached == 0)
              return fail(nothing_attached(*targets, "verbs",
                                           "trace a process that uses libibverbs (-p PID), or attach in the library "
                                           "with --lib PATH/libibverbs.so.1"));
            sink->probes_done(targets->attached, targets->pids.size());

            auto topology = std::make_shared<Topology>(Topology::read(args->sysfs_root, args->proc_root));
            topology->assign_ranks(targets->ranks);
            DeviceEventBuilder builder(topology.get());
            QpInventory inventory;
            EventDecoder decoder;
            VerbsDataPathTracer data_path(**program, args->proc_root);
            auto rank_of = [&](uint32_t pid) { return rank_for(*targets, pid); };
            auto reader = RingBufferReader::open((*program)->events_fd(), [&](std::span<const std::byte> record) {
              auto call = decoder.decode_verbs(record);
              if (!call) return;
              if (call->object && call->result == 0 &&
                  (call->kind == VerbsCallKind::create_qp || call->kind == VerbsCallKind::modify_qp)) {
                auto pid = static_cast<int32_t>(call->pid);
                auto it = targets->rank_of.find(pid);
                std::optional<RankIdentity> rank;
                if (it != targets->rank_of.end()) rank = it->second;
                if (auto status = data_path.saw_qp(pid, call->object, call->qp_num, rank)) {
                  // A text sink prints probe lines only with the first table.
                  if (args->json)
                    sink->probe_status(*status);
                  else
                    sink->note(data_path_status_text(*status));
                }
              }
              for (const QpEvent& e : inventory.apply(*call))
                sink->device_event(builder.qp(e, rank_for(*targets, e.pid)));
            });
            if (!reader) return fail(reader.error());
            const auto& stop = install_stop_handlers();
            uint64_t end = args->duration_s > 0 ? monotonic_ns() + static_cast<uint64_t>(args->duration_s * 1e9) : 0;
            // A QP far slower than the others, checked once a second and said once.
            std::set<std::pair<uint32_t, uint64_t>> said_slow;
            auto report_slow = [&](uint64_t now_ns) {
              if (!data_path.any()) return;
              auto stats = (*program)->qp_stats();
              for (const IbConnectionView& v : analyze_ib_connections(stats, rank_of)) {
                if (!v.slow || !said_slow.insert({v.stats->tgid, v.stats->comm}).second) continue;
                std::optional<DeviceEventBuilder::QpPath> path;
                if (auto q = inventory.last_known(v.stats->tgid, static_cast<uint32_t>(v.stats->comm)))
                  path = DeviceEventBuilder::QpPath::of(*q);
                sink->device_event(builder.slow_connection(slow_connection_of(v), v.rank, now_ns, path));
              }
            };
            uint64_t next_check = monotonic_ns() + 1'000'000'000;
            for (;;) {
              if (auto polled = (*reader)->poll(100); !polled) return fail(polled.error());
              if (monotonic_ns() >= next_check) {
                report_slow(monotonic_ns());
                next_check = monotonic_ns() + 1'000'000'000;
              }
              if (stop.load() || (end && monotonic_ns() >= end)) break;
              if (!targets->pids.empty() && std::none_of(targets->pids.begin(), targets->pids.end(), [&](int32_t pid) {
                    return process_alive(args->proc_root, pid);
                  })) {
                sink->note("every traced process has exited");
                break;
              }
            }
            (void)(*reader)->drain();
            report_slow(monotonic_ns());
            auto latencies = (*program)->qp_stats();
            auto latency_views = analyze_ib_connections(latencies, rank_of);
            size_t gone = 0;
            for (const auto& [pid, totals] : inventory.totals())
              if (!process_alive(args->proc_root, static_cast<int32_t>(pid))) gone += inventory.forget_process(pid);
            if (gone) sink->note(fmt::format("{} QP(s) of processes that exited without destroying them", gone));
            print_inventory(inventory, *targets, args->json);
            print_latencies(latency_views, inventory, *targets, args->json);
            for (const std::string& line : data_path.summary_lines(rank_of)) sink->note(line);
            VerbsCounters c = (*program)->counters();
            sink->note(fmt::format("{} verbs calls traced; {} lost (ring buffer full), {} undecodable", c.records,
                                   c.ringbuf_drops + c.state_failures, decoder.stats().rejected()));
            return 0;
          }};
}

}  // namespace slowburn::cli
