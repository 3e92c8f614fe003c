// `slowburn --help`: a map of the commands, grouped by what a person comes
// for (start here, tracing, hardware, fabric, fleet, forensics, agents),
// one line each, pointing to `slowburn CMD --help` for the rest. Each
// command's own --help keeps its whole text.
#pragma once

#include <CLI/CLI.hpp>

namespace slowburn::cli {

// Puts every subcommand of `app` in its group and makes the top-level help
// list them one line each; every command's own help lists its options
// without CLI11's internals (docs/cli.md). Call after every command is added.
void use_command_map(CLI::App& app);

}  // namespace slowburn::cli
