// Subcommands register themselves on the CLI11 app and hand back what to run
// when they are chosen. Only the CLI knows about argv and exit codes.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/error.h"
#include "detect/straggler.h"
#include "sinks/sink.h"

namespace slowburn::cli {

struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

// One file a subcommand, of one shape: user/cli/cmd_NAME.cpp for the
// sessions, tools/cmd_NAME.cpp for the one-liner tools; each registers its
// options and hands back what to run.
Command add_trace_command(CLI::App& app);
Command add_catalog_command(CLI::App& app);  // alias: probes, for a release
Command add_analyze_command(CLI::App& app);
Command add_investigate_command(CLI::App& app);
Command add_ranks_command(CLI::App& app);
Command add_stacks_command(CLI::App& app);
Command add_completion_command(CLI::App& app);  // hidden: bash completion and the man pages' command list
Command add_demo_command(CLI::App& app);
Command add_funclat_command(CLI::App& app);  // tools/cmd_funclat.cpp
Command add_xid_command(CLI::App& app);      // tools/cmd_xid.cpp
Command add_aer_command(CLI::App& app);      // tools/cmd_aer.cpp
Command add_pcie_command(CLI::App& app);     // tools/cmd_pcie.cpp
Command add_gpuirq_command(CLI::App& app);   // tools/cmd_gpuirq.cpp
Command add_fabric_command(CLI::App& app);   // tools/cmd_fabric.cpp
Command add_qp_command(CLI::App& app);       // tools/cmd_qp.cpp
Command add_ib_command(CLI::App& app);       // tools/cmd_ib.cpp
Command add_health_command(CLI::App& app);   // tools/cmd_health.cpp
Command add_check_command(CLI::App& app);    // tools/cmd_check.cpp

Command add_probe_command(CLI::App& app);  // the continuous service
Command add_mcp_command(CLI::App& app);    // the MCP server on stdio

// What --version and the MCP server's serverInfo say.
inline constexpr std::string_view kSlowburnVersion = "0.1.0";

// "M/N" (flagged in M of the last N windows) into the detector's settings.
Result<void> parse_persistence(const std::string& text, DetectorConfig& config);

// Prints "slowburn: <message>" on stderr; returns the exit code for errors.
int fail(const Error& error);

// Exit codes, one table for every command (docs/cli.md): 0 done (a
// verdict, a table, a watch that ended), 1 an error (bad input, no
// privileges, a failure), 2 no answer: a verdict could not be reached (too
// few aligned instances) or nothing to watch here (no device, no driver,
// nothing traced: Error::nothing_to_watch), 3 the demo's verdict did not
// match what it injected, 4 `health` found a check in state fail (warn
// alone exits 0), 5 `check` found a required row not ok.
constexpr int kExitUndetermined = 2;
constexpr int kExitNothingToWatch = 2;
constexpr int kExitMismatch = 3;
constexpr int kExitHealthFailed = 4;
constexpr int kExitCheckFailed = 5;

// The text or JSON-lines sink on stdout.

// `host`: what JSON lines name the node (default: its hostname);
// `wall_offset_ns`: CLOCK_REALTIME - CLOCK_MONOTONIC of the clock the times
// are on (default: this node's).
std::unique_ptr<Sink> make_stdout_sink(bool json, const std::string& host = "",
                                       std::optional<int64_t> wall_offset_ns = std::nullopt);

// Ctrl-C / SIGTERM: set once handlers are installed, read by sessions.
const std::atomic<bool>& install_stop_handlers();

}  // namespace slowburn::cli
