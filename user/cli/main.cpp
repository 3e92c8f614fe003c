// slowburn: find the straggler in a synchronised training job, and why.
#include <vector>

#include "cli/command.h"
#include "cli/command_map.h"
#include "cli/options.h"
#include "loader/libbpf_log.h"

int main(int argc, char** argv) {
  CLI::App app{
      "slowburn: names the straggler rank of a synchronised training job (the one that arrives last, not the\n"
      "ones that wait longest) from eBPF uprobes on collective-library calls, and finds why, layer by layer.\n\n"
      "Examples:\n"
      "  slowburn check                          # can slowburn work here, and what will it miss\n"
      "  slowburn demo                           # a 4-rank MPI job with one slow rank, traced live\n"
      "  slowburn trace -d 30                    # trace every rank for 30 s, name the straggler\n"
      "  slowburn stacks                         # a stuck job: every rank's stack, the odd one named\n"
      "  slowburn health                         # the node's checklist: ECC, links, clock, taint\n"
      "  slowburn help trace                     # one command's help (as slowburn trace --help)\n",
      "slowburn"};
  app.require_subcommand(1);
  app.fallthrough();  // -v/--verbose after the command too: `slowburn trace -v` as `slowburn -v trace`
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
      slowburn::cli::add_stacks_command(app), slowburn::cli::add_completion_command(app),
  };
  slowburn::cli::use_command_map(app);
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
