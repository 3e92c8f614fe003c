// Writes a session to a recording (record/schema.h) without slowing the
// ring-buffer consumer: the consumer only queues; a writer thread commits
// what is queued every 100 ms (or every 8192 calls) in one transaction, in
// WAL mode, so a killed tracer leaves every committed batch readable. A
// queue the disk cannot keep up with drops calls and counts them; a write
// that fails (disk full) stops the recording, keeps what was committed and
// is reported once. finish() folds the WAL back into one self-contained
// file to copy off the node.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "events/call_event.h"
#include "events/communicator.h"
#include "events/process_view.h"

namespace SQLite {
class Database;
}

namespace slowburn {

struct RecordingHeader {
  std::string host;  // the node, as analyze names it
};

class Recorder {
 public:
  using Rows = std::function<void(SQLite::Database&)>;

  // Creates the file (refusing one that exists: a recording is never
  // appended to) with the schema and the node's clock anchor.
  static Result<std::unique_ptr<Recorder>> create(const std::filesystem::path& path, const RecordingHeader& header);
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  // From the consumer: queued, never waits for the disk. The call's
  // communicator is written the first time it is seen, and again when the
  // registry has learnt more about it.
  void call(const CallEvent& call, const CallComm& comm);
  // The calls in flight as read at `read_ns`: the latest reading replaces
  // the one before (what a hang looks like when the recording ends).
  void in_flight(uint64_t read_ns, const std::vector<InFlightCall>& calls);
  // The ranks' processes at that reading (the latest kept).
  void process_views(uint64_t read_ns, const std::map<int32_t, ProcessView>& views);
  // A rank ended so (the kernel's word).
  void process_end(int32_t pid, const ProcessEnd& end);
  // Any other rows, written in order in the writer's transaction.
  void write(Rows rows);

  // Writes what is queued, stops the writer, checkpoints the WAL into the
  // file. The first write error, if any.
  Result<void> finish();

  uint64_t dropped_calls() const { return dropped_.load(); }
  // Calls queued for the writer: a producer faster than the disk (the
  // synthetic recordings' generator) waits on it rather than drop.
  size_t queued_calls();
  const std::filesystem::path& path() const { return path_; }

 private:
  struct CallRow {
    CallEvent call;
    uint32_t comm_id = 0;
    std::optional<int> comm_rank;
    uint64_t seq = 0;
    bool seq_absolute = false;
  };
  Recorder() = default;
  void writer_loop();
  void commit(std::vector<CallRow>& calls, std::vector<Rows>& rows);

  std::filesystem::path path_;
  std::unique_ptr<SQLite::Database> db_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<CallRow> calls_;
  std::vector<Rows> rows_;
  bool stopping_ = false;
  std::thread writer_;
  std::atomic<uint64_t> dropped_{0};
  std::optional<std::string> error_;                     // writer thread only, read after join
  std::map<uint32_t, const CommunicatorInfo*> written_;  // consumer thread only
  std::vector<CommunicatorRef> kept_;                    // keeps written_'s pointers valid
};

}  // namespace slowburn
