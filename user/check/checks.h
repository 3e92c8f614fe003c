// `slowburn check`, evaluated: a snapshot (check/check_snapshot.h) in, one
// CheckRow per check out. Pure: no files, no BPF, so every verdict (root,
// not root, no tracefs, lockdown, no BTF) is unit-tested on readings
// written by hand. docs/check.md lists the rows.
#pragma once

#include <vector>

#include "check/check_snapshot.h"
#include "health/check_row.h"

namespace slowburn {

std::vector<CheckRow> evaluate_checks(const CheckSnapshot& snapshot);

// The exit status `slowburn check` owes these rows: 0, or kExitCheckFailed
// in the CLI when any_required_failed().

// The pieces, each on the readings it needs (checks.cpp: the kernel,
// privileges and the BPF attach tests; checks_sources.cpp: tracepoints,
// kprobes, the ranks' probes, NVIDIA, RDMA, the clock).
void evaluate_kernel_checks(const CheckSnapshot& s, std::vector<CheckRow>& rows);
void evaluate_source_checks(const CheckSnapshot& s, std::vector<CheckRow>& rows);

// What to do when a program did not load: privileges, BTF, lockdown, or
// the libbpf log; shared by the bpf.* and tracefs rows.
std::string load_fix(const CheckSnapshot& s);
// What to do when tracefs cannot be listed.
std::string tracefs_fix(const CheckSnapshot& s);

}  // namespace slowburn
