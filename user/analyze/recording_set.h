// The recordings of one job, as analyze takes them: which files, which of
// their ranks belong to the job, and each rank's pid in the merged job
// (pids of different nodes may collide).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "record/recording_reader.h"

namespace slowburn {

struct NodeRecording {
  RecordingInfo info;
  std::set<int32_t> pids;                 // the job's ranks on it
  std::map<int32_t, int32_t> merged_pid;  // its pid -> the merged job's
  int64_t to_wall_ns = 0;                 // its CLOCK_MONOTONIC -> its CLOCK_REALTIME
};

// The recordings a list of files and directories names, in order: a
// directory gives its *.sbr files, sorted by name.
Result<std::vector<std::filesystem::path>> recordings_in(const std::vector<std::filesystem::path>& inputs);

// The nodes holding ranks of `job` (unset: the only job the recordings
// hold), in the order given; the first is the clock reference. An error
// says which jobs there are, or which two recordings name the same host.
// CLOCK_REALTIME - CLOCK_MONOTONIC of the reference read_job_recordings
// will pick (the first recording with a rank of `job`, or of any job): what
// puts the merged times on a wall clock. nullopt when none can be read.
std::optional<int64_t> reference_wall_offset(const std::vector<std::filesystem::path>& inputs,
                                             const std::optional<std::string>& job);

Result<std::vector<NodeRecording>> read_job_recordings(const std::vector<std::filesystem::path>& inputs,
                                                       const std::optional<std::string>& job);

// The probe a recording numbered `probe_id`, as this build's catalog has it.
const ProbeSpec* recorded_probe(const RecordingInfo& info, uint32_t probe_id);

// The key of a recorded communicator; one no other node shares when its row
// was never written (a killed tracer).
std::string recorded_comm_key(const RecordingInfo& info, uint32_t comm_id);

}  // namespace slowburn
