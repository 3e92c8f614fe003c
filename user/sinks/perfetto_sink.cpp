#include "sinks/perfetto_sink.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace slowburn {

using json = nlohmann::json;

Result<std::unique_ptr<PerfettoSink>> PerfettoSink::create(const std::string& path, int64_t wall_offset_ns,
                                                           std::string default_node, bool one_node) {
  std::unique_ptr<PerfettoSink> s(new PerfettoSink);
  s->out_.open(path, std::ios::out | std::ios::trunc);
  if (!s->out_) return make_error("cannot write the timeline {}: is its directory writable?", path);
  s->path_ = path;
  s->wall_offset_ns_ = wall_offset_ns;
  s->default_node_ = std::move(default_node);
  s->one_node_ = one_node;
  // ts + wall_offset_us = Unix time in us. The object stays open for the
  // events, streamed as they come: {"displayTimeUnit":...,"otherData":{...},"traceEvents":[
  std::string header = json{
      {"displayTimeUnit", "ns"},
      {"otherData",
       {{"clock", "CLOCK_MONOTONIC, microseconds"},
        {"wall_offset_us", static_cast<double>(wall_offset_ns) / 1e3},
        {"producer",
         "slowburn"}}}}.dump();
  header.pop_back();
  s->out_ << header << ",\"traceEvents\":[\n";
  return s;
}

PerfettoSink::~PerfettoSink() {
  if (!closed_) verdict({});
}

double PerfettoSink::us(uint64_t ns) const { return static_cast<double>(ns) / 1e3; }

void PerfettoSink::emit(const std::string& event) {
  if (closed_) return;
  out_ << (first_event_ ? "" : ",\n") << event;
  first_event_ = false;
}

int PerfettoSink::process_of(const std::string& node) {
  auto [it, fresh] = processes_.try_emplace(node, static_cast<int>(processes_.size()) + 1);
  if (fresh) {
    emit(json{{"ph", "M"}, {"name", "process_name"}, {"pid", it->second}, {"args", {{"name", node}}}}.dump());
    emit(json{{"ph", "M"}, {"name", "process_sort_index"}, {"pid", it->second}, {"args", {{"sort_index", it->second}}}}
             .dump());
  }
  return it->second;
}

std::string PerfettoSink::node_of(const std::string& host) const {
  return one_node_ || host.empty() ? default_node_ : host;
}

void PerfettoSink::rank(const RankIdentity& identity) { ranks_[identity.pid] = identity; }

int PerfettoSink::track_of(int32_t pid, uint32_t comm_id, const std::string& comm_label, uint64_t entry_ns,
                           uint64_t exit_ns) {
  auto& tracks = tracks_[{pid, comm_id}];
  for (Track& t : tracks)
    if (entry_ns >= t.busy_until_ns) {
      t.busy_until_ns = exit_ns;
      return t.tid;
    }
  // A new track: the first of this rank and communicator, or a spill.
  Track t{next_tid_++, exit_ns};
  auto r = ranks_.find(pid);
  std::string node = node_of(r != ranks_.end() ? r->second.host : "");
  std::string name = r != ranks_.end() ? fmt::format("rank {}", r->second.rank) : fmt::format("pid {}", pid);
  if (!comm_label.empty()) name += " · " + comm_label;
  if (!tracks.empty()) name += fmt::format(" #{}", tracks.size() + 1);
  int process = process_of(node);
  emit(json{{"ph", "M"}, {"name", "thread_name"}, {"pid", process}, {"tid", t.tid}, {"args", {{"name", name}}}}.dump());
  int sort = (r != ranks_.end() ? r->second.rank : 0) * 1000 + static_cast<int>(tracks.size());
  emit(json{
      {"ph", "M"}, {"name", "thread_sort_index"}, {"pid", process}, {"tid", t.tid}, {"args", {{"sort_index", sort}}}}
           .dump());
  tracks.push_back(t);
  return t.tid;
}

void PerfettoSink::call(const CallEvent& call, const CallComm& comm, const std::string& probe) {
  int32_t pid = static_cast<int32_t>(call.pid);
  uint32_t comm_id = comm.comm ? comm.comm->id : 0;
  std::string label = comm.comm && comm.comm->source != CommSource::job ? comm.comm->label : "";
  int tid = track_of(pid, comm_id, label, call.entry_ns, call.exit_ns);
  auto r = ranks_.find(pid);
  std::string node = node_of(r != ranks_.end() ? r->second.host : "");
  json args{{"seq", comm.seq}, {"tid", call.tid}};
  if (comm.comm) args["communicator"] = comm.comm->label;
  emit(json{{"ph", "X"},
            {"name", probe},
            {"cat", "collective"},
            {"pid", process_of(node)},
            {"tid", tid},
            {"ts", us(call.entry_ns)},
            {"dur", us(call.exit_ns - call.entry_ns)},
            {"args", std::move(args)}}
           .dump());
}

void PerfettoSink::probe_status(const ProbeStatus& status) {
  if (status.rank) rank(*status.rank);
}

void PerfettoSink::instant(const std::string& node, uint64_t ts_ns, const std::string& name,
                           const std::string& args_json) {
  emit(fmt::format(R"({{"ph":"i","s":"p","name":{},"pid":{},"tid":0,"ts":{},"args":{}}})", json(name).dump(),
                   process_of(node), json(us(ts_ns)).dump(), args_json));
}

void PerfettoSink::device_event(const DeviceEvent& event) {
  instant(default_node_, event.ts_ns, event.type, json{{"summary", event.summary}, {"device", event.device}}.dump());
}

void PerfettoSink::window(const WindowReport& report) {
  if (!report.aligned) return;
  for (const RankWindowStats& r : report.ranks) {
    if (!r.lateness_median_ns) continue;
    std::string node = node_of(r.identity.host);
    emit(json{{"ph", "C"},
              {"name", fmt::format("lateness rank {} {}", r.identity.rank, report.probe)},
              {"pid", process_of(node)},
              {"ts", us(report.start_ns)},
              {"args", {{"ms", *r.lateness_median_ns / 1e6}}}}
             .dump());
  }
}

void PerfettoSink::finding(const Finding& f) {
  std::string node = node_of(f.culprit.host);
  instant(node, f.detected_ns, fmt::format("{}: rank {}", f.type, f.culprit.rank), json{{"summary", f.summary}}.dump());
}

void PerfettoSink::verdict(const SessionVerdict&) {
  if (closed_) return;
  out_ << "\n]}\n";
  out_.close();
  closed_ = true;
}

Result<void> PerfettoSink::close() {
  verdict({});
  if (out_.fail()) return make_error("writing the timeline {} failed (is the disk full?): it is incomplete", path_);
  return {};
}

}  // namespace slowburn
