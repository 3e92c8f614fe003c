// Where a process's verbs data path runs: ibv_post_send() and ibv_poll_cq()
// are inline in the caller, calls through the context's ops into the
// provider (libmlx5, librxe ...), whose functions are static and, in
// Debian's packages, stripped. So they are found as the process finds
// them: from a QP the control path saw, its context's ops pointers, and the
// mapping each points into.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "core/error.h"
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

}  // namespace slowburn
