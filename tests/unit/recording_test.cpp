// Recordings: what trace --record writes is what analyze reads back; files
// that are not recordings, from a newer slowburn, or damaged are refused
// with the reason; a recording whose writer never finished still reads.
#include <SQLiteCpp/SQLiteCpp.h>
#include <gtest/gtest.h>

#include <fstream>

#include "probes/catalog.h"
#include "record/recorder.h"
#include "record/recording_reader.h"
#include "record/recording_sink.h"
#include "record/schema.h"
#include "support/temp_dir.h"

namespace slowburn::recording_test {
namespace {

using testing::TempDir;

CommunicatorRef sub_comm() {
  auto c = std::make_shared<CommunicatorInfo>();
  c->id = 3;
  c->key = "mpi:42:cid=3:ranks=2,3";
  c->label = "cid 3 (ranks 2,3)";
  c->backend = CommBackend::mpi;
  c->source = CommSource::memory;
  c->size = 2;
  c->members = {2, 3};
  c->local_pids = std::set<int32_t>{102, 103};
  return c;
}

ProbeStatus attached(int32_t pid, int rank) {
  ProbeStatus s;
  s.probe = "mpi.allreduce";
  s.pid = pid;
  s.state = ProbeState::attached;
  RankIdentity id;
  id.pid = pid;
  id.rank = rank;
  id.job = "42";
  id.launcher = "openmpi";
  id.local_rank = rank % 2;
  id.world_size = 4;
  s.rank = id;
  return s;
}

TEST(Recording, WhatIsWrittenReadsBack) {
  TempDir dir;
  auto path = dir.path() / "node-a.sbr";
  auto recorder = Recorder::create(path, {"node-a"});
  ASSERT_TRUE(recorder) << recorder.error().message;
  RecordingSink sink(**recorder);
  sink.probe_status(attached(102, 2));
  sink.probe_status(attached(103, 3));
  const ProbeSpec* allreduce = find_probe("mpi.allreduce");
  ASSERT_NE(allreduce, nullptr);
  CallComm comm{sub_comm(), 1, 0, false};
  for (uint64_t k = 1; k <= 1000; ++k)
    for (int32_t pid : {102, 103}) {
      CallEvent e;
      e.pid = e.tid = static_cast<uint32_t>(pid);
      e.probe_id = allreduce->id;
      e.seq = 2 * k;  // the kernel's per-thread number, apart from the communicator's
      e.entry_ns = k * 1'000'000 + static_cast<uint64_t>(pid);
      e.exit_ns = k * 1'000'000 + 500'000;
      e.size_arg = 4096;
      if (pid == 103) {  // one rank's kernel read its CPU times
        e.oncpu_ns = 100'000;
        e.runq_ns = 300'000;
      }
      comm.seq = k;
      (*recorder)->call(e, comm);
    }
  ASSERT_TRUE((*recorder)->finish());
  EXPECT_FALSE(std::filesystem::exists(path.string() + "-wal")) << "finish() leaves one self-contained file";

  auto info = read_recording_info(path);
  ASSERT_TRUE(info) << info.error().message;
  EXPECT_EQ(info->host, "node-a");
  EXPECT_GT(info->anchor_monotonic_ns, 0);
  EXPECT_GT(info->anchor_realtime_ns, info->anchor_monotonic_ns) << "a wall clock after 1970, past the uptime";
  ASSERT_EQ(info->ranks.size(), 2u);
  EXPECT_EQ(info->ranks[1].rank, 3);
  EXPECT_EQ(info->ranks[1].job, "42");
  EXPECT_EQ(info->ranks[1].host, "node-a");
  EXPECT_EQ(info->calls, 2000u);
  ASSERT_TRUE(info->communicators.contains(3));
  const RecordedCommunicator& c = info->communicators.at(3);
  EXPECT_EQ(c.key, "mpi:42:cid=3:ranks=2,3");
  EXPECT_EQ(c.members, (std::vector<int>{2, 3}));
  EXPECT_EQ(c.local_pids, (std::vector<int32_t>{102, 103}));
  EXPECT_EQ(c.backend, CommBackend::mpi);
  EXPECT_EQ(c.source, CommSource::memory);
  EXPECT_EQ(info->attached.size(), 2u);
  EXPECT_EQ(info->probes.at(allreduce->id), "mpi.allreduce");

  auto cursor = CallCursor::open(path);
  ASSERT_TRUE(cursor) << cursor.error().message;
  RecordedCall call;
  uint64_t n = 0, last_exit = 0;
  for (;;) {
    auto more = cursor->next(call);
    ASSERT_TRUE(more) << more.error().message;
    if (!*more) break;
    ++n;
    EXPECT_GE(call.exit_ns, last_exit) << "in the order recorded";
    last_exit = call.exit_ns;
    EXPECT_EQ(call.comm_id, 3u);
    EXPECT_EQ(call.comm_rank, 1);
    EXPECT_EQ(call.thread_seq, 2 * call.seq) << "both numbers kept, each its own";
    EXPECT_EQ(call.size_arg, 4096u);
    EXPECT_EQ(call.oncpu_ns, call.pid == 103 ? std::optional<uint64_t>(100'000) : std::nullopt);
    EXPECT_EQ(call.runq_ns, call.pid == 103 ? std::optional<uint64_t>(300'000) : std::nullopt);
  }
  EXPECT_EQ(n, 2000u);

  // A schema-4 recording (no CPU times) still reads, without them.
  {
    SQLite::Database db(path.string(), SQLite::OPEN_READWRITE);
    for (const char* column : {"oncpu_ns", "runq_ns", "size_arg"})
      db.exec(fmt::format("ALTER TABLE calls DROP COLUMN {}", column));
    db.exec("PRAGMA user_version=4");
  }
  {
    auto v4 = CallCursor::open(path);  // closed before the next change: a statement mid-read locks the file
    ASSERT_TRUE(v4) << v4.error().message;
    auto first = v4->next(call);
    ASSERT_TRUE(first && *first);
    EXPECT_FALSE(call.oncpu_ns.has_value());
    EXPECT_EQ(call.size_arg, 0u);
  }

  // A schema-1 recording (no thread_seq column) still reads, without the number.
  {
    SQLite::Database db(path.string(), SQLite::OPEN_READWRITE);
    db.exec("ALTER TABLE calls DROP COLUMN thread_seq");
    db.exec("PRAGMA user_version=1");
  }
  auto old = CallCursor::open(path);
  ASSERT_TRUE(old) << old.error().message;
  auto more = old->next(call);
  ASSERT_TRUE(more && *more);
  EXPECT_EQ(call.seq, 1u);
  EXPECT_FALSE(call.thread_seq.has_value());
}

TEST(Recording, AnExistingFileIsNeverAppendedTo) {
  TempDir dir;
  auto path = dir.path() / "x.sbr";
  std::ofstream(path) << "keep me";
  auto recorder = Recorder::create(path, {"n"});
  ASSERT_FALSE(recorder);
  EXPECT_NE(recorder.error().message.find("never appended to"), std::string::npos);
  std::ifstream in(path);
  std::string text;
  std::getline(in, text);
  EXPECT_EQ(text, "keep me");
}

TEST(Recording, ForeignNewerAndDamagedFilesAreRefusedWithTheReason) {
  TempDir dir;
  auto text = dir.path() / "notes.sbr";
  std::ofstream(text) << "not a database at all, just some text that is long enough to have a header\n";
  auto r = read_recording_info(text);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("cannot read it as a slowburn recording"), std::string::npos) << r.error().message;

  auto other = dir.path() / "other.sbr";
  {
    SQLite::Database db(other.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    db.exec("CREATE TABLE t(x)");
  }
  r = read_recording_info(other);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("not a slowburn recording"), std::string::npos) << r.error().message;

  auto newer = dir.path() / "newer.sbr";
  ASSERT_TRUE(Recorder::create(newer, {"n"}).ok());
  {
    SQLite::Database db(newer.string(), SQLite::OPEN_READWRITE);
    db.exec(fmt::format("PRAGMA user_version={}", recording::kSchemaVersion + 1));
  }
  r = read_recording_info(newer);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("newer slowburn"), std::string::npos) << r.error().message;

  auto missing = read_recording_info(dir.path() / "absent.sbr");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("no such recording"), std::string::npos);

  // Cut in the middle of its pages.
  auto whole = dir.path() / "whole.sbr";
  {
    auto recorder = Recorder::create(whole, {"n"});
    ASSERT_TRUE(recorder);
    RecordingSink sink(**recorder);
    for (int i = 0; i < 200; ++i) sink.probe_status(attached(1000 + i, i));
    ASSERT_TRUE((*recorder)->finish());
  }
  auto size = std::filesystem::file_size(whole);
  std::filesystem::resize_file(whole, size / 2 + 100);
  r = read_recording_info(whole);
  ASSERT_FALSE(r) << "a truncated recording reads as damaged, not as fewer ranks";
  EXPECT_NE(r.error().message.find("cannot read it as a slowburn recording"), std::string::npos) << r.error().message;
}

// Found writing recording_fuzz: a file marked as a recording whose meta is a
// recursive view made read_recording_info (and `slowburn analyze`) loop
// forever. Views are refused before anything is read, by either reader.
TEST(Recording, ARecursiveViewIsRefusedNotRunForever) {
  TempDir dir;
  auto path = dir.path() / "view.sbr";
  {
    SQLite::Database db(path.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    db.exec(fmt::format("PRAGMA application_id={}; PRAGMA user_version={}", recording::kApplicationId,
                        recording::kSchemaVersion));
    db.exec(
        "CREATE VIEW meta AS WITH RECURSIVE c(key, value) AS (SELECT 'host', 'x' UNION ALL SELECT key, value FROM c) "
        "SELECT key, value FROM c");
    db.exec(
        "CREATE VIEW calls AS WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) SELECT n AS pid, n "
        "AS tid, n AS probe_id, n AS entry_ns, n AS exit_ns, n AS comm_id, n AS comm_rank, n AS seq, 0 AS "
        "seq_absolute, n AS thread_seq FROM c");
  }
  auto info = read_recording_info(path);
  ASSERT_FALSE(info);
  EXPECT_NE(info.error().message.find("defines views"), std::string::npos) << info.error().message;
  auto cursor = CallCursor::open(path);
  ASSERT_FALSE(cursor);
  EXPECT_NE(cursor.error().message.find("defines views"), std::string::npos) << cursor.error().message;
}

}  // namespace
}  // namespace slowburn::recording_test
