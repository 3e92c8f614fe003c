// Communicators: which collective instance a call belongs to. An instance
// is (communicator, sequence number on it): every member issues a
// communicator's collectives in the same order, so the k-th call on C is the
// same instance on every rank, with no clock. Filled by comm/comm_registry
// (which reads process memory and lifecycle calls), consumed by the pure
// detector.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "probes/catalog.h"

namespace slowburn {

// How a communicator was identified across processes.
enum class CommSource {
  job,       // not told apart: every rank of the job (no communicator argument, or one not resolved)
  memory,    // read from the rank's memory (Open MPI: context id and members)
  creation,  // its creation was traced (MPI_Comm_split, ncclCommInitRank ...)
  inferred,  // gloo: process groups told apart by size, rank and tag-matched timing
};
std::string_view comm_source_name(CommSource source);

struct CommunicatorInfo {
  uint32_t id = 0;    // this session's number for it; 0 is the job-wide communicator
  std::string key;    // identity across processes and nodes ("mpi:cid=3:ranks=0,1")
  std::string label;  // for people: "cid 3 (ranks 0,1)", "world", "gloo group of 2 (ranks 2,3)"
  CommBackend backend = CommBackend::none;
  CommSource source = CommSource::job;
  std::optional<int> size;   // members on every node
  std::vector<int> members;  // their global ranks, when known
  // The members on this node, when known (else learnt from the calls).
  std::optional<std::set<int32_t>> local_pids;
  // Sequence numbers count from the communicator's creation on every member
  // (gloo's tag; a creation slowburn saw): instances align by them.
  bool seq_from_creation = false;
  // Calls of several groups of one size, until the registry tells them
  // apart: members absent from it are expected, not news.
  bool provisional = false;
};

using CommunicatorRef = std::shared_ptr<const CommunicatorInfo>;

// What the registry says about one collective call.
struct CallComm {
  CommunicatorRef comm;          // never null: the job-wide communicator at least
  std::optional<int> comm_rank;  // the caller's position in it
  uint64_t seq = 0;              // its sequence number on (communicator, probe)
  bool seq_absolute = false;     // counted from the communicator's creation (else from when tracing began)
};

}  // namespace slowburn
