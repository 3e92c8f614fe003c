// Checks for the options every command shares (durations, pids, the roots of
// captured trees), so that a wrong value is refused before anything runs,
// with one message that says what was wrong and what to give instead.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "engine/node_sources.h"

namespace slowburn::cli {

// Seconds: a number >= 0 ("-d 30", "-i 0.5"); with `positive`, > 0.
CLI::Validator seconds(bool positive = false);

// A process id: a positive integer.
CLI::Validator process_id();

// The root of a live or captured tree (--sysfs-root, --procfs-root): an
// existing directory. A root that is not there is an error, not an empty
// machine.
CLI::Validator root_directory();

// --procfs-root, --sysfs-root, --no-hardware, --no-rdma and --no-host: the
// node's sources of a session (trace, investigate, probe), in one place.
void add_node_source_options(CLI::App* sub, NodeSourcesOptions& node);

// A command-line parse error as one line on stderr and exit status 1 (the
// project's "an error"), naming the command and where its options are.
int usage_error(const CLI::App& app, const CLI::ParseError& error);

}  // namespace slowburn::cli
