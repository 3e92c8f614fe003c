// Checks for the options every command shares (durations, pids, the roots of
// captured trees), so that a wrong value is refused before anything runs,
// with one message that says what was wrong and what to give instead.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "engine/node_sources.h"

namespace slowburn::cli {

// Past this, seconds overflow the nanosecond clocks they are added to (1e99
// and inf ended a session at once): one bound for every command.
constexpr double kMostSeconds = 1e7;

// Seconds: a number >= 0 ("-d 30", "-i 0.5"); with `positive`, > 0; at
// least `min_s`, at most `max_s`.
CLI::Validator seconds(bool positive = false, double min_s = 0, double max_s = kMostSeconds);

// The flags every command shares, added by these alone so that each means
// the same, is checked the same and reads the same in every --help
// (docs/cli.md, "One grammar"):
//
// -d,--duration SECONDS: how long to VERB; 0 or left out: until `until`
// ("Ctrl-C", "SIGTERM"). At most ~115 days (seconds()).
CLI::Option* add_duration(CLI::App* sub, double& seconds_value, const std::string& verb,
                          const std::string& until = "Ctrl-C");
// -d,--duration SECONDS>0: a command that always ends (demo, investigate):
// 0 is refused, its default shown.
CLI::Option* add_bounded_duration(CLI::App* sub, double& seconds_value, const std::string& verb);
// -i,--interval SECONDS: the time between WHAT ("live tables"), at most an
// hour; `zero` says what 0 means ("at the end only"), "" where 0 is refused
// (then at least `min_s`). The default is shown.
CLI::Option* add_interval(CLI::App* sub, double& seconds_value, const std::string& what, const std::string& zero = "",
                          double min_s = 0);
// -p,--pid PID: the processes to WHAT (repeatable; `by_default` what is
// done without), or one process.
CLI::Option* add_pids(CLI::App* sub, std::vector<int32_t>& pids, const std::string& what,
                      const std::string& by_default = "");
CLI::Option* add_pid(CLI::App* sub, int32_t& pid, const std::string& what);
// --json: JSON lines, one object a line, each with `kind` among `kinds`
// (docs/json-lines.md).
CLI::Option* add_json(CLI::App* sub, bool& json, const std::string& kinds);

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
