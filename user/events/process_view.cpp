#include "events/process_view.h"

#include <fmt/format.h>

#include <csignal>

#include "core/format.h"

namespace slowburn {

bool ProcessView::does_not_run() const {
  switch (state) {
    case State::stopped:
    case State::zombie:
    case State::gone:
      return true;
    case State::disk_sleep:
      return on_cpu_ns == 0;
    default:
      return false;
  }
}

std::string_view process_state_name(ProcessView::State state) {
  switch (state) {
    case ProcessView::State::running:
      return "running";
    case ProcessView::State::sleeping:
      return "sleeping";
    case ProcessView::State::disk_sleep:
      return "disk_sleep";
    case ProcessView::State::stopped:
      return "stopped";
    case ProcessView::State::zombie:
      return "zombie";
    case ProcessView::State::gone:
      return "gone";
    case ProcessView::State::unknown:
      break;
  }
  return "unknown";
}

ProcessView::State process_state_named(std::string_view name) {
  for (auto state : {ProcessView::State::running, ProcessView::State::sleeping, ProcessView::State::disk_sleep,
                     ProcessView::State::stopped, ProcessView::State::zombie, ProcessView::State::gone})
    if (process_state_name(state) == name) return state;
  return ProcessView::State::unknown;
}

std::string signal_name(int signal) {
  static constexpr std::pair<int, const char*> kNames[] = {
      {SIGHUP, "SIGHUP"},   {SIGINT, "SIGINT"},   {SIGQUIT, "SIGQUIT"}, {SIGILL, "SIGILL"},   {SIGTRAP, "SIGTRAP"},
      {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},   {SIGKILL, "SIGKILL"}, {SIGUSR1, "SIGUSR1"},
      {SIGSEGV, "SIGSEGV"}, {SIGUSR2, "SIGUSR2"}, {SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"}, {SIGTERM, "SIGTERM"},
      {SIGCHLD, "SIGCHLD"}, {SIGCONT, "SIGCONT"}, {SIGSTOP, "SIGSTOP"}, {SIGTSTP, "SIGTSTP"}, {SIGTTIN, "SIGTTIN"},
      {SIGTTOU, "SIGTTOU"}, {SIGXCPU, "SIGXCPU"}, {SIGXFSZ, "SIGXFSZ"}, {SIGSYS, "SIGSYS"}};
  for (const auto& [number, name] : kNames)
    if (number == signal) return name;
  return fmt::format("signal {}", signal);
}

namespace {

std::string cpu_phrase(const ProcessView& v) {
  uint64_t span = v.on_cpu_ns + v.off_cpu_ns;
  if (span == 0) return "";
  double share = static_cast<double>(v.on_cpu_ns) / static_cast<double>(span);
  return fmt::format(", {} on a CPU in {} ({:.0f}%)", format_ns(static_cast<double>(v.on_cpu_ns)),
                     format_ns(static_cast<double>(span)), share * 100);
}

}  // namespace

std::string describe_process(const ProcessView& v) {
  std::string cpu = cpu_phrase(v);
  switch (v.state) {
    case ProcessView::State::stopped:
      return fmt::format("stopped ({}state T){}", v.signal ? signal_name(*v.signal) + ", " : "", cpu);
    case ProcessView::State::zombie:
      return "exited, not yet reaped (a zombie)";
    case ProcessView::State::gone:
      if (v.oom_killed) return "killed by the OOM killer";
      if (v.signal) return "killed by " + signal_name(*v.signal);
      if (v.exit_code) return fmt::format("exited with status {}", *v.exit_code);
      return "gone";
    case ProcessView::State::disk_sleep:
      return fmt::format("in uninterruptible sleep (state D{}){}", v.wchan.empty() ? "" : " in " + v.wchan, cpu);
    case ProcessView::State::sleeping:
      return fmt::format("sleeping{}{}{}", v.syscall.empty() ? "" : " in " + v.syscall,
                         v.waits_on.empty() ? "" : " on " + v.waits_on, cpu);
    case ProcessView::State::running:
      return fmt::format("running{}", cpu);
    case ProcessView::State::unknown:
      break;
  }
  return "in an unknown state";
}

}  // namespace slowburn

namespace slowburn {

std::string describe_end(const ProcessEnd& end) {
  std::string sender;
  if (end.sender_pid != 0)
    sender = fmt::format(" (sent by pid {}{})", end.sender_pid, end.sender_comm.empty() ? "" : ", " + end.sender_comm);
  if (end.oom_killed) return "killed by the OOM killer";
  if (end.signal)
    return fmt::format("killed by {}{}{}", signal_name(*end.signal), end.core_dumped ? ", core dumped" : "", sender);
  if (end.exit_code && *end.exit_code != 0) return fmt::format("exited with status {}", *end.exit_code);
  return "exited normally";
}

ProcessView ended_view(const ProcessEnd& end) {
  ProcessView v;
  v.state = ProcessView::State::gone;
  v.signal = end.signal;
  v.exit_code = end.exit_code;
  v.oom_killed = end.oom_killed;
  return v;
}

}  // namespace slowburn
