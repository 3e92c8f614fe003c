#include "analyze/merged_replay.h"

#include <algorithm>
#include <queue>

#include "probes/catalog.h"

namespace slowburn {

namespace {

std::shared_ptr<CommunicatorInfo> fresh_comm(const RecordedCommunicator& c, uint32_t id) {
  auto m = std::make_shared<CommunicatorInfo>();
  m->id = id;
  m->key = c.key;
  m->label = c.label;
  m->backend = c.backend;
  m->source = c.source;
  m->size = c.size;
  m->members = c.members;
  m->seq_from_creation = c.seq_from_creation;
  if (c.local_pids) m->local_pids.emplace();
  return m;
}

// Communicators matched across nodes by key; the job-wide one keeps id 0.
std::map<std::string, CommunicatorRef> merge_communicators(const std::vector<PlacedNode>& nodes) {
  std::map<std::string, std::shared_ptr<CommunicatorInfo>> merged;
  uint32_t next_id = 1;
  for (const PlacedNode& placed : nodes)
    for (const auto& [id, c] : placed.node->info.communicators) {
      auto& m = merged[c.key];
      if (!m) m = fresh_comm(c, c.source == CommSource::job ? 0 : next_id++);
      for (int r : c.members)
        if (std::find(m->members.begin(), m->members.end(), r) == m->members.end()) m->members.push_back(r);
      std::sort(m->members.begin(), m->members.end());
      if (!c.local_pids) m->local_pids.reset();
      if (m->local_pids)
        for (int32_t pid : *c.local_pids)
          if (auto it = placed.node->merged_pid.find(pid); it != placed.node->merged_pid.end())
            m->local_pids->insert(it->second);
    }
  return {merged.begin(), merged.end()};
}

}  // namespace

struct MergedReplay::Stream {
  const PlacedNode* placed;
  CallCursor cursor;
  RecordedCall next;
  int64_t at() const { return static_cast<int64_t>(placed->to_reference(next.exit_ns)); }
};

MergedReplay::MergedReplay(std::vector<PlacedNode> nodes) : nodes_(std::move(nodes)) {
  comms_ = merge_communicators(nodes_);
  for (const auto& [key, comm] : comms_) next_lone_id_ = std::max(next_lone_id_, comm->id + 1);
}

CallComm MergedReplay::merged_comm(const NodeRecording& node, const RecordedCall& c) {
  CallComm comm;
  std::string key = recorded_comm_key(node.info, c.comm_id);
  comm.comm = comms_[key];
  if (!comm.comm) {  // its row was never written: its calls stand alone
    auto lone = std::make_shared<CommunicatorInfo>();
    lone->id = next_lone_id_++;
    lone->key = key;
    lone->label = key;
    lone->source = CommSource::inferred;
    comm.comm = comms_[key] = lone;
  }
  comm.comm_rank = c.comm_rank;
  comm.seq = c.seq;
  comm.seq_absolute = c.seq_absolute;
  return comm;
}

CallEvent MergedReplay::merged_call(const PlacedNode& placed, const RecordedCall& c, const ProbeSpec& spec) {
  CallEvent e;
  e.pid = static_cast<uint32_t>(placed.node->merged_pid.at(c.pid));
  auto [tid, fresh] =
      tids_.try_emplace({placed.node, c.tid}, c.tid == static_cast<uint32_t>(c.pid) ? e.pid : next_tid_);
  if (fresh && tid->second == next_tid_) ++next_tid_;
  e.tid = tid->second;
  e.probe_id = spec.id;
  // The kernel's per-thread number counts lost records; a schema-1
  // recording kept only the communicator's (0: not counted).
  e.seq = c.thread_seq.value_or(0);
  e.entry_ns = placed.to_reference(c.entry_ns);
  e.exit_ns = placed.to_reference(c.exit_ns);
  // Durations, not instants: each rank's CPU times are its own node's, no offset needed.
  e.oncpu_ns = c.oncpu_ns;
  e.runq_ns = c.runq_ns;
  e.size_arg = c.size_arg;
  return e;
}

Result<ReplaySpan> MergedReplay::replay(JobJudges& judges, PerfettoSink* timeline,
                                        const std::function<void(DetectorOutput)>& emit) {
  std::vector<Stream> streams;
  for (const PlacedNode& placed : nodes_) {
    auto cursor = CallCursor::open(placed.node->info.path);
    if (!cursor) return cursor.error();
    streams.push_back({&placed, std::move(*cursor), {}});
  }
  auto later = [&](size_t a, size_t b) { return streams[a].at() > streams[b].at(); };
  std::priority_queue<size_t, std::vector<size_t>, decltype(later)> heads(later);
  auto advance_stream = [&](size_t i) -> Result<void> {
    auto more = streams[i].cursor.next(streams[i].next);
    if (!more) return more.error();
    if (*more) heads.push(i);
    return {};
  };
  for (size_t i = 0; i < streams.size(); ++i)
    if (auto ok = advance_stream(i); !ok) return ok.error();
  ReplaySpan span;
  uint64_t next_advance = 0;
  while (!heads.empty()) {
    size_t i = heads.top();
    heads.pop();
    const PlacedNode& placed = *streams[i].placed;
    const RecordedCall& c = streams[i].next;
    if (const ProbeSpec* spec = recorded_probe(placed.node->info, c.probe_id);
        spec && placed.node->pids.contains(c.pid)) {
      CallEvent e = merged_call(placed, c, *spec);
      CallComm comm = merged_comm(*placed.node, c);
      if (timeline) timeline->call(e, comm, spec->name);
      // Past the cut (stop_at) on the timeline only: rows are only nearly
      // in exit order, so the streams are read to their ends.
      if (stop_ns_ && e.exit_ns > *stop_ns_) {
        if (auto ok = advance_stream(i); !ok) return ok.error();
        continue;
      }
      judges.on_named_call(e, comm);
      if (span.first_ns == 0) span.first_ns = e.exit_ns;
      span.last_ns = std::max(span.last_ns, e.exit_ns);
      if (e.exit_ns >= next_advance) {
        emit(judges.advance(e.exit_ns));
        next_advance = e.exit_ns + kAdvancePeriodNs;
      }
    }
    if (auto ok = advance_stream(i); !ok) return ok.error();
  }
  return span;
}

DetectorOutput MergedReplay::check_in_flight(JobJudges& judges, ReplaySpan& span) const {
  // After a cut, who was inside a collective at the cut is not recorded (the
  // closed nodes' readings are from their ends): no wait is judged from them.
  if (stop_ns_) return {};
  std::optional<uint64_t> read_at;
  std::vector<InFlightCall> in_flight;
  for (const PlacedNode& placed : nodes_) {
    const RecordingInfo& info = placed.node->info;
    if (!info.in_flight_read_ns) continue;
    auto read = placed.to_reference(*info.in_flight_read_ns);
    read_at = read_at ? std::min(*read_at, read) : read;
    for (const RecordedInFlight& c : info.in_flight) {
      const ProbeSpec* spec = recorded_probe(info, c.probe_id);
      if (!spec || !placed.node->pids.contains(c.pid)) continue;
      InFlightCall call;
      call.tgid = static_cast<uint32_t>(placed.node->merged_pid.at(c.pid));
      call.tid = c.tid;
      call.probe_id = spec->id;
      call.entry_ns = placed.to_reference(c.entry_ns);
      if (auto comm = comms_.find(recorded_comm_key(info, c.comm_id)); comm != comms_.end())
        call.communicator = comm->second;
      in_flight.push_back(std::move(call));
    }
  }
  if (!read_at) return {};
  span.last_ns = std::max(span.last_ns, *read_at);
  // The kernel's view of each rank as its node recorded it at that reading.
  std::map<int32_t, ProcessView> views;
  for (const PlacedNode& placed : nodes_)
    for (const auto& [pid, view] : placed.node->info.process_states)
      if (auto merged = placed.node->merged_pid.find(pid); merged != placed.node->merged_pid.end())
        views[merged->second] = view;
  auto lookup = [&views](int32_t pid, uint64_t) -> std::optional<ProcessView> {
    auto it = views.find(pid);
    return it == views.end() ? std::nullopt : std::optional<ProcessView>(it->second);
  };
  return judges.check_in_flight(*read_at, std::move(in_flight), lookup);
}

DetectorOutput MergedReplay::retire_ended(JobJudges& judges) const {
  std::vector<std::pair<ProcessEnd, int32_t>> ended;
  for (const PlacedNode& placed : nodes_)
    for (const auto& [pid, end] : placed.node->info.process_ends)
      if (auto merged = placed.node->merged_pid.find(pid); merged != placed.node->merged_pid.end()) {
        ProcessEnd shifted = end;
        shifted.ts_ns = placed.to_reference(end.ts_ns);
        ended.emplace_back(std::move(shifted), merged->second);
      }
  std::sort(ended.begin(), ended.end(), [](const auto& a, const auto& b) { return a.first.ts_ns < b.first.ts_ns; });
  DetectorOutput out;
  for (const auto& [end, pid] : ended) {
    DetectorOutput one = judges.retire(pid, Drained::replayed(), end);
    for (auto& f : one.findings) out.findings.push_back(std::move(f));
    for (auto& n : one.notes) out.notes.push_back(std::move(n));
  }
  return out;
}

std::vector<CommunicatorRef> MergedReplay::communicators() const {
  std::vector<CommunicatorRef> out;
  for (const auto& [key, comm] : comms_) out.push_back(comm);
  std::sort(out.begin(), out.end(), [](const CommunicatorRef& a, const CommunicatorRef& b) { return a->id < b->id; });
  return out;
}

}  // namespace slowburn
