// clock.sync, clock.daemon, kernel.taint, kernel.oops, kernel.hung_task,
// kernel.soft_lockup.
#include <fmt/format.h>
#include <sys/timex.h>

#include <algorithm>

#include "core/strings.h"
#include "health/health_checks_internal.h"

namespace slowburn {

CheckRow evaluate_clock(const Result<ClockReading>& clock, const HealthThresholds& thresholds) {
  CheckRow c;
  c.check = "clock.sync";
  if (!clock) {
    c.state = CheckState::unavailable;
    c.detail = clock.error().message;
    return c;
  }
  c.value = clock->esterror_us;
  c.threshold = thresholds.max_clock_esterror_us;
  c.unit = "us";
  bool unsync = (clock->status & STA_UNSYNC) != 0 || clock->clock_state == TIME_ERROR;
  if (unsync) {
    c.state = CheckState::warn;
    c.detail = fmt::format(
        "the kernel's clock is not synchronised (adjtimex: status 0x{:04x}{}, clock state {}; maximum error {} us): "
        "no time daemon disciplines it, so traces and logs of this node drift from the others'",
        clock->status, (clock->status & STA_UNSYNC) ? " has STA_UNSYNC" : "", clock->clock_state, clock->maxerror_us);
  } else if (clock->esterror_us > thresholds.max_clock_esterror_us) {
    c.state = CheckState::warn;
    c.detail = fmt::format("synchronised, but its estimated error {} us is above {} us (maximum error {} us)",
                           clock->esterror_us, thresholds.max_clock_esterror_us, clock->maxerror_us);
  } else {
    c.state = CheckState::ok;
    c.detail = fmt::format("synchronised: estimated error {} us, maximum error {} us (adjtimex status 0x{:04x})",
                           clock->esterror_us, clock->maxerror_us, clock->status);
  }
  return c;
}

CheckRow evaluate_taint(const Result<uint64_t>& tainted) {
  CheckRow c;
  c.check = "kernel.taint";
  if (!tainted) {
    c.state = CheckState::unavailable;
    c.detail = tainted.error().message;
    return c;
  }
  c.value = *tainted;
  c.threshold = 0;
  std::vector<TaintFlag> flags = decode_taint(*tainted);
  c.state = CheckState::ok;
  std::vector<std::string> parts;
  for (const TaintFlag& f : flags) {
    c.state = std::max(c.state, f.severity);
    parts.push_back(fmt::format("{} ({})", f.letter, f.meaning));
  }
  c.detail = flags.empty() ? "not tainted"
                           : fmt::format("tainted {} ({}): {}", *tainted, taint_letters(flags), join(parts, ", "));
  return c;
}

namespace health_detail {

namespace {

void evaluate_time_daemons(Evaluation& e) {
  const auto& daemons = e.after.time_daemons;
  if (!daemons) {
    e.unavailable("clock.daemon", "", e.node_ranks(), daemons.error().message);
    return;
  }
  if (daemons->empty()) {
    e.add("clock.daemon", CheckState::warn, "", nullptr, nullptr, e.node_ranks(),
          fmt::format("no chronyd, ptp4l, phc2sys, ntpd or systemd-timesyncd process under {}",
                      e.after.sources.proc_root.string()));
    return;
  }
  std::vector<std::string> names, with_pids;
  for (const TimeDaemon& d : *daemons) {
    if (std::find(names.begin(), names.end(), d.name) == names.end()) names.push_back(d.name);
    with_pids.push_back(fmt::format("{} (pid {})", d.name, d.pid));
  }
  e.add("clock.daemon", CheckState::ok, "", join(names, ","), nullptr, e.node_ranks(), "running: " + join(with_pids));
}

void evaluate_log_class(Evaluation& e, const char* check, KernelLogClass cls, const char* what) {
  const auto& log = e.after.kernel_log;
  if (!log) {
    e.unavailable(check, "", e.node_ranks(), log.error().message);
    return;
  }
  uint64_t count = 0;
  bool hard = false;
  const KernelLogLine* last = nullptr;
  for (const KernelLogLine& line : *log) {
    if (classify_kernel_log_message(line.message) != cls) continue;
    ++count;
    hard = hard || (cls == KernelLogClass::lockup && is_hard_lockup_message(line.message));
    last = &line;
  }
  if (!count) {
    e.add(check, CheckState::ok, "", 0, 0, e.node_ranks(),
          fmt::format("no {} in the kernel log ({} lines read)", what, log->size()));
    return;
  }
  CheckState state = cls == KernelLogClass::oops || hard ? CheckState::fail : CheckState::warn;
  e.add(check, state, "", count, 0, e.node_ranks(),
        fmt::format("{} {} line(s) in the kernel log{}; last: {}", count, what,
                    hard ? ", a hard lockup among them" : "", format_kernel_log_line(*last)));
}

}  // namespace

void evaluate_kernel_checks(Evaluation& e) {
  CheckRow clock = evaluate_clock(e.after.clock, e.context.thresholds);
  clock.ranks = e.node_ranks();
  e.rows.push_back(std::move(clock));
  evaluate_time_daemons(e);
  CheckRow taint = evaluate_taint(e.after.tainted);
  taint.ranks = e.node_ranks();
  e.rows.push_back(std::move(taint));
  evaluate_log_class(e, "kernel.oops", KernelLogClass::oops, "oops, BUG or panic");
  evaluate_log_class(e, "kernel.hung_task", KernelLogClass::hung_task, "hung-task (blocked for more than N seconds)");
  evaluate_log_class(e, "kernel.soft_lockup", KernelLogClass::lockup, "soft/hard lockup or RCU stall");
}

}  // namespace health_detail

}  // namespace slowburn
