// Helpers shared by the root-only BPF and scenario tests.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/subprocess.h"
#include "events/call_event.h"
#include "support/temp_dir.h"

namespace slowburn::testing {

#define SKIP_UNLESS_ROOT()                                                                        \
  do {                                                                                            \
    if (geteuid() != 0) GTEST_SKIP() << "needs root (CAP_BPF, CAP_PERFMON) to load BPF programs"; \
  } while (0)

// This kernel was booted by the kernel matrix (tests/kernels: "sb_suite=" on
// its command line): a throwaway guest whose kernel log no monitor reads.
bool in_kernel_matrix_guest();

// Tests that write fake hardware errors (NVIDIA Xid lines) into the kernel
// log run only there: on a node, every health monitor reads that log (DCGM,
// node-problem-detector, slowburn's own health) and would report a dying GPU.
// The host's run-tests.sh leaves them out (GuestKernelLog.*); the guests of
// make test-kernels-ci run them (tests/kernels/guest/kernel_log.sh).
#define SKIP_UNLESS_KERNEL_MATRIX_GUEST()                                                                   \
  do {                                                                                                      \
    SKIP_UNLESS_ROOT();                                                                                     \
    if (!::slowburn::testing::in_kernel_matrix_guest())                                                     \
      GTEST_SKIP() << "writes fake NVIDIA Xid lines into this kernel's log, which a node's monitors read: " \
                      "runs only in the kernel matrix's guests (make test-kernels-ci)";                     \
  } while (0)

// A clear straggler's slowdown for tests whose claim is not how weak a
// straggler can be (a cause, SIGTERM, an alert): with two busy processes on
// the 2 cores the demo's 1.5x rank was sometimes not named (docs/detector.md, Known limits).
inline constexpr double kClearSlowdown = 2.0;

// A real OpenMPI job: root for the probes, mpirun to start it.
#define SKIP_UNLESS_MPI()                                                                              \
  do {                                                                                                 \
    SKIP_UNLESS_ROOT();                                                                                \
    if (!find_program("mpirun")) GTEST_SKIP() << "mpirun not installed (apt-get install openmpi-bin)"; \
  } while (0)

#define SKIP_UNLESS_MPICH()                                                                              \
  do {                                                                                                   \
    SKIP_UNLESS_ROOT();                                                                                  \
    if (!find_program("mpirun.mpich")) GTEST_SKIP() << "MPICH is not installed (apt-get install mpich)"; \
  } while (0)

#define SKIP_UNLESS_TORCH()                                                                                    \
  do {                                                                                                         \
    SKIP_UNLESS_ROOT();                                                                                        \
    if (access("/usr/lib/python3/dist-packages/torch/__init__.py", R_OK) != 0)                                 \
      GTEST_SKIP() << "Debian's python3-torch is not installed (apt-get install python3-torch, or make deps)"; \
  } while (0)

std::filesystem::path target_path(const std::string& name);  // build/tests/targets/NAME
std::filesystem::path slowburn_binary();                     // build/slowburn
// The bundled workloads: build/libexec/NAME (slowburn-mpi-workload, slowburn-ddp-workload.py).
std::string workload_path(const std::string& name);
void touch(const std::filesystem::path& path);

// IDs of loaded BPF programs with this name (from the kernel, as bpftool lists them).
std::vector<uint32_t> bpf_program_ids_named(const std::string& name);

// BPF links (uprobe, multi-uprobe, tracepoint ...) whose program has this
// name, from the kernel's list of links (bpftool link show).
size_t bpf_links_of_program(const std::string& name);

// A whole file as text ("" when it cannot be read).
std::string read_text(const std::filesystem::path& path);

// Replaces a file's content at once, as a sysfs or ethtool counter reads
// whole: a reader never sees the empty file a truncating write leaves between
// its open and its write. The new content is written in the temp directory
// (not beside the file, where a reader listing counters would see it) and
// renamed over the file, so the file must be under the temp directory too,
// as a TempDir's are. False when it could not (nothing left behind); it
// never throws, as the counter threads that call it must not.
bool replace_text(const std::filesystem::path& path, const std::string& text);

// The JSON lines of a session's output (other lines skipped); with a kind,
// only the lines of that "kind".
std::vector<nlohmann::json> json_lines(const std::string& text, const std::string& kind = "");

// Polls the condition until it holds (true) or the timeout passes (false).
bool wait_until(const std::function<bool()>& condition, std::chrono::milliseconds timeout);

// The slowburn binary run to its end (prefix: what runs it, e.g. setpriv).
struct Ran {
  int status = -1;  // -1: it did not finish within the timeout
  std::string output;
};
Ran run_slowburn(const std::vector<std::string>& args, std::chrono::milliseconds timeout = std::chrono::seconds(60),
                 const std::vector<std::string>& prefix = {});

// The JSON lines of `output` (other lines, stderr's, skipped) validated
// against docs/schemas by docs/schemas/validate.py (Debian's
// python3-jsonschema): "" when every line is valid and every kind of
// `require_kinds` ("rank,summary") was seen, else the validator's report.
std::string schema_errors(const std::string& output, const std::string& require_kinds = "");

// Whether this process could give the capability to a child (it is in the
// bounding set: a container's may lack some, CAP_SYS_RESOURCE here).
bool capability_in_bounding_set(int cap);

}  // namespace slowburn::testing
