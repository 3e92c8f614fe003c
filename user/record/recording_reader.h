// Reads a recording (record/schema.h) back: what analyze needs to merge
// nodes. Refuses, with the reason, a file that is not a slowburn recording,
// one from a newer schema, and a damaged one; a recording whose tracer was
// killed reads up to its last committed batch.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/rank_identity.h"
#include "events/communicator.h"
#include "events/device_event.h"
#include "events/process_view.h"
#include "probes/probe_status.h"

namespace slowburn {

struct RecordedCommunicator {
  uint32_t id = 0;  // the recording session's number for it
  std::string key;  // identity across nodes
  std::string label;
  CommBackend backend = CommBackend::none;
  CommSource source = CommSource::job;
  std::optional<int> size;
  std::vector<int> members;
  std::optional<std::vector<int32_t>> local_pids;
  bool seq_from_creation = false;
};

struct RecordedCall {
  int32_t pid = 0;
  uint32_t tid = 0;
  uint32_t probe_id = 0;
  uint64_t entry_ns = 0;  // the node's CLOCK_MONOTONIC
  uint64_t exit_ns = 0;
  uint32_t comm_id = 0;
  std::optional<int> comm_rank;
  uint64_t seq = 0;  // on its communicator
  bool seq_absolute = false;
  // The kernel's number on (thread, probe), 0 when it could not number it;
  // absent in schema 1 recordings.
  std::optional<uint64_t> thread_seq;
  // The calling thread's CPU time and run-queue wait, the message size
  // (schema 5; absent before).
  std::optional<uint64_t> oncpu_ns;
  std::optional<uint64_t> runq_ns;
  uint64_t size_arg = 0;
};

// A call that had entered and not returned at the recording's last reading.
struct RecordedInFlight {
  int32_t pid = 0;
  uint32_t tid = 0;
  uint32_t probe_id = 0;
  uint64_t entry_ns = 0;
  uint32_t comm_id = 0;
};

struct RecordingInfo {
  std::filesystem::path path;
  std::string host;
  int64_t anchor_monotonic_ns = 0;
  int64_t anchor_realtime_ns = 0;
  std::vector<RankIdentity> ranks;
  std::map<uint32_t, std::string> probes;  // id -> catalog name
  std::map<uint32_t, RecordedCommunicator> communicators;
  std::vector<std::pair<std::string, int32_t>> attached;  // (probe, pid) attached
  uint64_t calls = 0;
  // The first and last recorded calls' exits (rows are in nearly exit order).
  std::optional<std::pair<uint64_t, uint64_t>> exit_span_ns;
  std::map<std::string, uint64_t> counters;   // the session's loss counters, as its summary wrote them
  std::optional<uint64_t> in_flight_read_ns;  // when the calls in flight were last read
  std::vector<RecordedInFlight> in_flight;
  std::map<int32_t, ProcessView> process_states;  // pid -> its process at that reading (schema 4)
  std::map<int32_t, ProcessEnd> process_ends;     // pid -> how it ended, where the kernel said (schema 4)
  // The node's hardware, fabric and host events, with the cause rank they were recorded with.
  std::vector<DeviceEvent> device_events;
  // Its node-wide sources (pid 0: nvidia.xid, pcie.link, host.sched, ...) as they reported their state.
  std::vector<ProbeStatus> sources;
  // Its tracer ended the session (meta's closed_monotonic_ns, schema 6). A
  // recording whose tracer was killed, or whose node went down, holds what
  // it committed until then, and says nothing more.
  bool closed = false;
};

Result<RecordingInfo> read_recording_info(const std::filesystem::path& path);

// Streams the calls in the order they were recorded (the ring buffer's:
// nearly by exit). `next` returns false at the end.
class CallCursor {
 public:
  static Result<CallCursor> open(const std::filesystem::path& path);
  CallCursor(CallCursor&&) noexcept;
  CallCursor& operator=(CallCursor&&) noexcept;
  ~CallCursor();
  Result<bool> next(RecordedCall& call);

 private:
  struct State;
  explicit CallCursor(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace slowburn
