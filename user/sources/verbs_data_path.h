// Where a process's verbs data path runs: ibv_post_send() and ibv_poll_cq()
// are inline in the caller, calls through the context's ops into the
// provider (libmlx5, librxe ...), whose functions are static and, in
// Debian's packages, stripped. So they are found as the process finds
// them: from a QP the control path saw, its context's ops pointers, and the
// mapping each points into.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/rank_identity.h"
#include "probes/probe_status.h"
#include "procfs/mapped_file.h"

namespace slowburn {

struct VerbsDataPath {
  uint64_t post_send = 0;  // the functions' addresses in the process
  uint64_t poll_cq = 0;
  std::string library;            // the provider, as the process mapped it
  MappedFile file;                // opened as the very file mapped: what to attach to
  uint64_t post_send_offset = 0;  // file offsets: where the uprobes go
  uint64_t poll_cq_offset = 0;
};

// From `qp` (a struct ibv_qp* of process `pid`, whose number the control
// path read as `qp_num`). Fails, saying why, when the process is gone, the
// QP freed (its number no longer there), the memory unreadable, or a
// pointer leads outside an executable file mapping.
Result<VerbsDataPath> find_verbs_data_path(const std::filesystem::path& proc_root, int32_t pid, uint64_t qp,
                                           uint32_t qp_num);

class VerbsProgram;

// Follows the control path's QPs into each process's data path: the first
// QP whose context leads to a provider gets that process's post_send and
// poll_cq probed (once: one provider per process is what a job loads). A
// QP freed before it was read (UCX creates and destroys test QPs while it
// opens a device) is no way in: the next is tried, up to kTries.
class VerbsDataPathTracer {
 public:
  static constexpr size_t kTries = 8;
  VerbsDataPathTracer(VerbsProgram& program, std::filesystem::path proc_root)
      : program_(program), proc_root_(std::move(proc_root)) {}

  // A QP the control path saw created or modified in process `pid`. What
  // became of the process's data path, when that was decided now.
  std::optional<ProbeStatus> saw_qp(int32_t pid, uint64_t qp, uint32_t qp_num, std::optional<RankIdentity> rank);
  bool any() const { return !traced_.empty(); }
  // The end of a session: what the data path saw, in one line ("" when
  // nothing was traced), and a line per process still not traced.
  std::vector<std::string> summary_lines(const std::function<std::optional<int>(uint32_t)>& rank_of) const;

 private:
  struct Tries {
    std::set<std::pair<uint64_t, uint32_t>> qps;  // (struct ibv_qp*, its number) read
    std::string last_error;
  };
  VerbsProgram& program_;
  std::filesystem::path proc_root_;
  std::set<int32_t> traced_;
  std::set<int32_t> given_up_;  // said once, not tried again
  std::map<int32_t, Tries> tries_;
};

}  // namespace slowburn
