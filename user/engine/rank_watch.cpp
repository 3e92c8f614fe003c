#include "engine/rank_watch.h"

#include <fmt/format.h>

#include <csignal>

#include "loader/lifecycle_program.h"
#include "procfs/process_state.h"

namespace slowburn {

namespace {

constexpr size_t kKeptSamples = 600;  // 10 minutes at the 1 s liveness period: longer than any --hang-s in use

ProcessView::State state_of(char letter) {
  switch (letter) {
    case 'R':
      return ProcessView::State::running;
    case 'S':
    case 'I':
      return ProcessView::State::sleeping;
    case 'D':
      return ProcessView::State::disk_sleep;
    case 'T':
    case 't':
      return ProcessView::State::stopped;
    case 'Z':
      return ProcessView::State::zombie;
    case 'X':
      return ProcessView::State::gone;
    default:
      return ProcessView::State::unknown;
  }
}

}  // namespace

ProcessEnd end_from_exit(const LifecycleRecord& exit, const std::optional<LifecycleRecord>& signal, bool oom) {
  ProcessEnd end;
  end.ts_ns = exit.ts_ns;
  end.oom_killed = oom;
  // A group exit (a thread's fatal signal, exit_group) ends the leader with its code.
  int code = exit.group_exit_code != 0 ? exit.group_exit_code : exit.exit_code;
  if ((code & 0x7f) != 0) {
    end.signal = code & 0x7f;
    end.core_dumped = (code & 0x80) != 0;
  } else {
    end.exit_code = (code >> 8) & 0xff;
  }
  // Who sent it: the last record of that signal, unless it raised it itself (a fault).
  if (end.signal && signal && signal->signal == *end.signal && signal->sender_pid != 0 &&
      static_cast<int32_t>(signal->sender_pid) != exit.pid) {
    end.sender_pid = signal->sender_pid;
    end.sender_comm = signal->sender_comm;
  }
  return end;
}

RankWatch::RankWatch(std::filesystem::path proc_root) : proc_root_(std::move(proc_root)) {}
RankWatch::~RankWatch() = default;
RankWatch::RankWatch(RankWatch&&) noexcept = default;
RankWatch& RankWatch::operator=(RankWatch&&) noexcept = default;

ProbeStatus RankWatch::attach_lifecycle(const AddRing& add) {
  ProbeStatus status;
  status.probe = "process.lifecycle";
  auto program = LifecycleProgram::load_and_attach();
  if (!program) {
    status.detail = program.error().message + " (a rank's end is then said without its signal or status)";
    return status;
  }
  auto added = add((*program)->events_fd(), [this](std::span<const std::byte> record) {
    if (auto r = decoder_.decode_lifecycle(record)) on_record(*r);
  });
  if (!added) {
    status.state = ProbeState::failed;
    status.detail = added.error().message;
    return status;
  }
  program_ = std::move(*program);
  for (const auto& [pid, samples] : cpu_) (void)program_->follow(pid);
  status.state = ProbeState::attached;
  if (!program_->sees_oom()) status.detail = "no oom:mark_victim tracepoint: an OOM kill reads as SIGKILL";
  return status;
}

void RankWatch::follow(int32_t pid) {
  cpu_[pid];
  if (program_) (void)program_->follow(pid);
}

void RankWatch::forget(int32_t pid) {
  cpu_.erase(pid);
  last_signal_.erase(pid);
  ends_.erase(pid);
}

void RankWatch::on_record(const LifecycleRecord& r) {
  switch (r.kind) {
    case LifecycleRecord::Kind::signal:
      if (r.signal == SIGCONT)
        last_signal_.erase(r.pid);
      else
        last_signal_[r.pid] = {r.signal, r.ts_ns, r.sender_pid, r.sender_comm};
      break;
    case LifecycleRecord::Kind::oom:
      ends_[r.pid].oom_killed = true;  // before its exit: kept when the exit comes
      break;
    case LifecycleRecord::Kind::exit: {
      std::optional<LifecycleRecord> sent;
      if (auto s = last_signal_.find(r.pid); s != last_signal_.end()) {
        LifecycleRecord rec;
        rec.kind = LifecycleRecord::Kind::signal;
        rec.signal = s->second.signal;
        rec.sender_pid = s->second.sender_pid;
        rec.sender_comm = s->second.sender_comm;
        sent = rec;
      }
      bool oom = ends_.contains(r.pid) && ends_[r.pid].oom_killed;
      ends_[r.pid] = end_from_exit(r, sent, oom);
      break;
    }
  }
}

void RankWatch::sample(uint64_t now_ns) {
  for (auto& [pid, samples] : cpu_) {
    auto s = read_process_sample(proc_root_, pid);
    if (!s) continue;
    samples.push_back({now_ns, s->cpu_ns});
    while (samples.size() > kKeptSamples) samples.pop_front();
  }
}

std::optional<ProcessView> RankWatch::view(int32_t pid, uint64_t since_ns, uint64_t now_ns) const {
  auto end = ends_.find(pid);
  if (end != ends_.end() && end->second.ts_ns != 0) return ended_view(end->second);
  auto s = read_process_sample(proc_root_, pid);
  if (!s) {
    ProcessView gone;
    gone.state = ProcessView::State::gone;
    return gone;
  }
  ProcessView v;
  v.state = state_of(s->state);
  if (v.state == ProcessView::State::zombie && s->exit_code) {
    int code = *s->exit_code;
    if ((code & 0x7f) != 0)
      v.signal = code & 0x7f;
    else
      v.exit_code = (code >> 8) & 0xff;
  }
  if (v.state != ProcessView::State::running) {
    v.syscall = s->syscall_name;
    v.waits_on = s->waits_on;
    v.wchan = s->wchan;
    v.kernel_stack = s->kernel_stack;
  }
  v.threads = s->threads;
  if (auto sig = last_signal_.find(pid); sig != last_signal_.end() && v.state == ProcessView::State::stopped)
    v.signal = sig->second.signal;
  // CPU time since `since_ns`: from the first sample at or after it (a
  // second's sampling: what ran before the wait began is not counted), or
  // the latest one when none is that recent.
  v.since_ns = since_ns;
  if (auto samples = cpu_.find(pid); samples != cpu_.end() && !samples->second.empty()) {
    const CpuSample* base = &samples->second.back();
    for (const CpuSample& c : samples->second)
      if (c.ts_ns >= since_ns) {
        base = &c;
        break;
      }
    uint64_t span = now_ns > base->ts_ns ? now_ns - base->ts_ns : 0;
    v.since_ns = base->ts_ns;
    v.on_cpu_ns = std::min(span, s->cpu_ns > base->cpu_ns ? s->cpu_ns - base->cpu_ns : 0);
    v.off_cpu_ns = span - v.on_cpu_ns;
  }
  return v;
}

StragglerDetector::ProcessLookup RankWatch::lookup(uint64_t now_ns) const {
  return [this, now_ns](int32_t pid, uint64_t since_ns) { return view(pid, since_ns, now_ns); };
}

std::optional<ProcessEnd> RankWatch::end_of(int32_t pid) const {
  auto it = ends_.find(pid);
  if (it == ends_.end() || it->second.ts_ns == 0) return std::nullopt;
  return it->second;
}

uint64_t RankWatch::ringbuf_drops() const { return program_ ? program_->ringbuf_drops() : 0; }

}  // namespace slowburn
