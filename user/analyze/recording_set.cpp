#include "analyze/recording_set.h"

#include <fmt/format.h>

#include <algorithm>

#include "probes/catalog.h"

namespace slowburn {

namespace {

// The job to judge: the one asked for, or the only one there is.
Result<std::string> pick_job(const std::map<std::string, std::set<std::string>>& jobs,
                             const std::optional<std::string>& wanted) {
  auto named = [](const std::string& j) { return j.empty() ? std::string("(no job id)") : j; };
  if (wanted) {
    if (jobs.contains(*wanted)) return *wanted;
    std::string known;
    for (const auto& [j, hosts] : jobs) known += (known.empty() ? "" : ", ") + named(j);
    return make_error("no rank of job '{}' in these recordings (they hold: {})", *wanted, known);
  }
  if (jobs.size() > 1) {
    std::string list;
    for (const auto& [j, hosts] : jobs)
      list += fmt::format("{}{} on {} node(s)", list.empty() ? "" : "; ", named(j), hosts.size());
    return make_error("these recordings hold {} jobs ({}): pick one with --job", jobs.size(), list);
  }
  return jobs.empty() ? std::string() : jobs.begin()->first;
}

// Merged pids: a node's own where no other node used it, else a fresh one.
void merge_pids(std::vector<NodeRecording>& nodes, const std::string& job) {
  std::set<int32_t> used;
  int32_t fresh = 1 << 23;  // above the kernel's pid_max
  for (NodeRecording& node : nodes)
    for (const RankIdentity& r : node.info.ranks) {
      if (r.job != job) continue;
      node.pids.insert(r.pid);
      int32_t merged = used.contains(r.pid) ? fresh++ : r.pid;
      used.insert(merged);
      node.merged_pid[r.pid] = merged;
    }
}

}  // namespace

Result<std::vector<std::filesystem::path>> recordings_in(const std::vector<std::filesystem::path>& inputs) {
  std::vector<std::filesystem::path> out;
  for (const auto& input : inputs) {
    std::error_code ec;
    if (!std::filesystem::is_directory(input, ec)) {
      out.push_back(input);
      continue;
    }
    std::vector<std::filesystem::path> found;
    for (const auto& entry : std::filesystem::directory_iterator(input, ec))
      if (entry.is_regular_file() && entry.path().extension() == ".sbr") found.push_back(entry.path());
    if (found.empty()) return make_error("{}: no recordings (*.sbr) in this directory", input.string());
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  if (out.empty()) return make_error("no recordings given");
  return out;
}

std::optional<int64_t> reference_wall_offset(const std::vector<std::filesystem::path>& inputs,
                                             const std::optional<std::string>& job) {
  auto paths = recordings_in(inputs);
  if (!paths) return std::nullopt;
  for (const auto& path : *paths)
    if (auto info = read_recording_info(path))
      for (const RankIdentity& r : info->ranks)
        if (!job || r.job == *job) return info->anchor_realtime_ns - info->anchor_monotonic_ns;
  return std::nullopt;
}

Result<std::vector<NodeRecording>> read_job_recordings(const std::vector<std::filesystem::path>& inputs,
                                                       const std::optional<std::string>& job) {
  auto paths = recordings_in(inputs);
  if (!paths) return paths.error();
  std::vector<NodeRecording> nodes;
  std::map<std::string, std::set<std::string>> jobs;  // job -> hosts
  for (const auto& path : *paths) {
    auto info = read_recording_info(path);
    if (!info) return info.error();
    for (const NodeRecording& other : nodes)
      if (other.info.host == info->host)
        return make_error("{} and {} both come from host '{}': give each tracer its own --host",
                          other.info.path.string(), path.string(), info->host);
    for (const RankIdentity& r : info->ranks) jobs[r.job].insert(info->host);
    NodeRecording node;
    node.info = std::move(*info);
    node.to_wall_ns = node.info.anchor_realtime_ns - node.info.anchor_monotonic_ns;
    nodes.push_back(std::move(node));
  }
  auto picked = pick_job(jobs, job);
  if (!picked) return picked.error();
  merge_pids(nodes, *picked);
  // Recordings without a rank of the job are not its nodes (nor its clock reference).
  std::erase_if(nodes, [](const NodeRecording& n) { return n.pids.empty(); });
  if (nodes.empty()) return make_error("no recording holds a rank of the job");
  return nodes;
}

const ProbeSpec* recorded_probe(const RecordingInfo& info, uint32_t probe_id) {
  auto it = info.probes.find(probe_id);
  return it == info.probes.end() ? nullptr : find_probe(it->second);
}

std::string recorded_comm_key(const RecordingInfo& info, uint32_t comm_id) {
  auto c = info.communicators.find(comm_id);
  return c != info.communicators.end() ? c->second.key : fmt::format("{}#{}", info.host, comm_id);
}

}  // namespace slowburn
