// slowburn: find the straggler in a synchronised training job, and why.
#include <vector>

#include "cli/command.h"
#include "cli/options.h"
#include "loader/libbpf_log.h"

int main(int argc, char** argv) {
  CLI::App app{
      "slowburn: names the straggler rank of a synchronised training job (the one that arrives last, not the "
      "ones that wait longest) from eBPF uprobes on collective-library calls.\n\n"
      "Examples:\n"
      "  slowburn help trace                     # one command's help (as slowburn trace --help)\n"
      "  slowburn ranks                          # rank processes on this node\n"
      "  slowburn stacks                         # a stuck job: every rank's stack, the odd one named\n"
      "  slowburn catalog --pid 4242             # where each probe attaches in a rank\n"
      "  slowburn trace -d 30                    # trace every rank for 30 s, name the straggler\n"
      "  slowburn trace --probe 'mpi.*' --json   # JSON lines\n"
      "  slowburn funclat /usr/lib/x86_64-linux-gnu/libmpi.so.40:MPI_Allreduce\n"
      "  slowburn demo                           # a 4-rank MPI job with one slow rank, traced live\n"
      "  slowburn xid                            # NVIDIA Xid errors as they happen (dmesg -w | grep Xid)\n"
      "  slowburn aer                            # PCIe AER errors, decoded\n"
      "  slowburn pcie                           # PCIe link table: current vs max vs expected, ranks behind\n"
      "  slowburn gpuirq -d 10                   # GPU interrupt rate and handler latency\n"
      "  slowburn ib -d 30                       # NCCL IB requests per rank and connection\n"
      "  slowburn qp                             # RDMA QPs: states, peers, errors\n"
      "  slowburn fabric                         # NIC counters: PFC pause, ECN/CNP, retransmissions\n"
      "  slowburn health                         # the node's telemetry checklist: ECC, EDAC, links, clock, taint\n"
      "  slowburn investigate --dot graph.dot    # the cause, layer by layer, as a failure graph\n"
      "  slowburn check                          # can slowburn work here, and what will it miss\n"
      "  slowburn mcp                            # MCP server on stdio: ranks, trace, events, health, analyze as tools",
      "slowburn"};
  app.require_subcommand(1);
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose,
               "Show libbpf's debug output (and the whole verifier log of a rejected program)");
  app.set_version_flag("--version", "slowburn " + std::string(slowburn::cli::kSlowburnVersion));

  std::vector<slowburn::cli::Command> commands = {
      slowburn::cli::add_trace_command(app),  slowburn::cli::add_catalog_command(app),
      slowburn::cli::add_ranks_command(app),  slowburn::cli::add_funclat_command(app),
      slowburn::cli::add_demo_command(app),   slowburn::cli::add_xid_command(app),
      slowburn::cli::add_aer_command(app),    slowburn::cli::add_pcie_command(app),
      slowburn::cli::add_gpuirq_command(app), slowburn::cli::add_ib_command(app),
      slowburn::cli::add_qp_command(app),     slowburn::cli::add_probe_command(app),
      slowburn::cli::add_fabric_command(app), slowburn::cli::add_analyze_command(app),
      slowburn::cli::add_health_command(app), slowburn::cli::add_investigate_command(app),
      slowburn::cli::add_check_command(app),  slowburn::cli::add_mcp_command(app),
      slowburn::cli::add_stacks_command(app),
  };
  if (auto exit_code = slowburn::cli::before_parse(app, argc, argv)) return *exit_code;
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return slowburn::cli::usage_error(app, e);
  }
  slowburn::set_libbpf_verbose(verbose);
  for (const auto& command : commands)
    if (command.app->parsed()) return command.run();
  return 2;
}
