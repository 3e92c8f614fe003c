// slowburn mcp: an MCP server on stdio, so an assistant can ask this node
// which rank is the straggler. Read-only tools (mcp/mcp_tools.h), one call
// at a time; stdout carries the protocol only, logs go to stderr.
#include <csignal>
#include <iostream>

#include "cli/command.h"
#include "cli/options.h"
#include "mcp/mcp_stdio.h"
#include "mcp/mcp_tools.h"

namespace slowburn::cli {

namespace {
struct McpArgs {
  std::string proc_root = "/proc";
  std::string sysfs_root = "/sys";
  std::string kmsg;
};

int run_mcp(const McpArgs& args) {
  // First, before anything can print: stdout is the protocol's alone.
  auto protocol_fd = take_stdout_for_protocol();
  if (!protocol_fd) return fail(protocol_fd.error());
  const auto& stop = install_stop_handlers();
  std::signal(SIGPIPE, SIG_IGN);  // a client gone is a failed write, not a killed server

  McpToolContext context;
  context.proc_root = args.proc_root;
  context.sysfs_root = args.sysfs_root;
  if (!args.kmsg.empty()) context.kmsg_file = args.kmsg;
  context.host = hostname();
  context.stop = &stop;
  auto tools = slowburn_tools(context);
  if (!tools) return fail(tools.error());
  ServerIdentity server;
  server.version = std::string(kSlowburnVersion);
  server.instructions = slowburn_instructions();
  std::cerr << fmt::format("slowburn mcp: serving {} tools on stdio (MCP {}), one JSON-RPC message a line\n",
                           tools->tools().size(), supported_protocol_versions().front());
  return serve_lines(std::cin, fd_line_writer(*protocol_fd), *tools, server, stop);
}
}  // namespace

Command add_mcp_command(CLI::App& app) {
  auto args = std::make_shared<McpArgs>();
  CLI::App* sub = app.add_subcommand(
      "mcp",
      "Serve slowburn as a Model Context Protocol server on stdio (JSON-RPC 2.0, one message a line; logs on "
      "stderr), for an MCP client such as an AI assistant. Tools, all read-only, one call at a time: check, ranks, "
      "trace (duration_s up to 50 s, pids, probes), stacks (pids, samples, interval_s), events (duration_s up to 30 "
      "s), health (interval_s), investigate (duration_s, or from: recordings), analyze (paths, job). Protocol "
      "revisions 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05.\n\n"
      "Examples:\n"
      "  slowburn mcp                               # started by the client: "
      "{\"command\":\"slowburn\",\"args\":[\"mcp\"]}\n"
      "  echo '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}' | slowburn mcp\n"
      "  slowburn mcp --sysfs-root /captured/sys --procfs-root /captured/proc   # tools read a captured tree\n\n"
      "Exit status: 0 the client closed its input, 1 an error (a tool's failure is an MCP error, not an exit).");
  sub->add_option("--procfs-root", args->proc_root, "procfs the tools read ranks from (a captured tree)")
      ->capture_default_str()
      ->check(root_directory());
  sub->add_option("--sysfs-root", args->sysfs_root, "sysfs the tools read the topology and devices from")
      ->capture_default_str()
      ->check(root_directory());
  sub->add_option("--kmsg", args->kmsg, "health: a captured kernel log instead of /dev/kmsg")->check(kernel_log_file());
  return {sub, [args] { return run_mcp(*args); }};
}

}  // namespace slowburn::cli
