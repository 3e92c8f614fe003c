// Checks for the options every command shares (durations, pids, the roots of
// captured trees), so that a wrong value is refused before anything runs,
// with one message that says what was wrong and what to give instead.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "core/error.h"
#include "engine/node_sources.h"

namespace slowburn::cli {

// Seconds: a number >= 0 ("-d 30", "-i 0.5"); with `positive`, > 0.
CLI::Validator seconds(bool positive = false);

// A finite number above 0 (a threshold such as --z-threshold), refused in
// one short line with an example; CLI11's PositiveNumber printed DBL_MAX.
CLI::Validator above_zero(const std::string& example);

// A captured kernel log: a file (or device) that exists, never a directory
// (which read as an empty log: every kernel-log row "ok").
CLI::Validator kernel_log_file();
// A process id: a positive integer.
CLI::Validator process_id();

// The root of a live or captured tree (--sysfs-root, --procfs-root): an
// existing directory. A root that is not there is an error, not an empty
// machine.
CLI::Validator root_directory();

// A --sysfs-root other than this machine's /sys must hold bus/pci/devices:
// a directory that does not would read as a machine with no PCIe device
// (every check unavailable, nothing to watch), not as a mistake.
Result<void> check_sysfs_tree(const std::string& sysfs_root);

// --procfs-root, --sysfs-root, --no-hardware, --no-rdma and --no-host: the
// node's sources of a session (trace, investigate, probe), in one place.
void add_node_source_options(CLI::App* sub, NodeSourcesOptions& node);

// A command-line parse error as one line on stderr and exit status 1 (the
// project's "an error"), naming the command and where its options are.
int usage_error(const CLI::App& app, const CLI::ParseError& error);

// Before CLI11 parses: `slowburn help [CMD]` prints that help (exit 0); an
// unknown command or an unknown option before the command is named, with
// the closest command (exit 1). nullopt: let the parser go on (CLI11 alone
// said "A subcommand is required" for all three).
std::optional<int> before_parse(const CLI::App& app, int argc, const char* const* argv);

}  // namespace slowburn::cli
