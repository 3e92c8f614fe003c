// One node's recording (`trace --record`) of a synthetic 4-rank job with
// one slow rank, written in well under a second: what analyze (and slowburn
// mcp's analyze tool) is given in tests that are about something else.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "core/error.h"
#include "probes/catalog.h"
#include "record/recorder.h"
#include "record/recording_sink.h"
#include "support/synthetic_job.h"

namespace slowburn::testing {

// Ranks 0-3 on mpi.allreduce, `slow_rank` computing 1.5x the others, 3000 steps.
inline Result<void> write_synthetic_recording(const std::filesystem::path& path, int slow_rank,
                                              const std::string& host = "node-a", const std::string& job = "77") {
  auto recorder = Recorder::create(path, {host});
  if (!recorder) return recorder.error();
  RecordingSink sink(**recorder);
  const ProbeSpec* allreduce = find_probe("mpi.allreduce");
  for (int r = 0; r < 4; ++r) {
    ProbeStatus s;
    s.probe = allreduce->name;
    s.pid = SyntheticJob::pid(r);
    s.state = ProbeState::attached;
    RankIdentity id;
    id.pid = s.pid;
    id.rank = r;
    id.job = job;
    s.rank = id;
    sink.probe_status(s);
  }
  auto comm = std::make_shared<CommunicatorInfo>();
  comm->id = 0;
  comm->key = "job:" + job;
  comm->label = "all ranks";
  SyntheticJob synthetic;
  synthetic.ranks = 4;
  synthetic.compute_ns = [slow_rank](int rank, int) { return rank == slow_rank ? 4.5e6 : 3e6; };
  for (CallEvent e : synthetic.run(3000)) {
    e.probe_id = allreduce->id;
    (*recorder)->call(e, {comm, std::nullopt, e.seq, false});
  }
  return (*recorder)->finish();
}

}  // namespace slowburn::testing
