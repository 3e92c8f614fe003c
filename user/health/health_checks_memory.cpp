// memory.edac_ce, memory.edac_ue (EDAC counters per memory controller and
// DIMM), memory.mce_tracepoint, memory.mc_event_tracepoint, memory.mce_log.
#include <fmt/format.h>

#include <algorithm>

#include "core/strings.h"
#include "health/health_checks_internal.h"

namespace slowburn::health_detail {

namespace {

const EdacController* find_controller(const Result<std::vector<EdacController>>& edac, const std::string& name) {
  if (!edac) return nullptr;
  for (const EdacController& mc : *edac)
    if (mc.name == name) return &mc;
  return nullptr;
}

std::optional<uint64_t> dimm_count(const EdacDimm& d, bool ue) { return ue ? d.ue : d.ce; }

std::string dimm_name(const EdacDimm& d) { return d.label.empty() ? d.name : fmt::format("{} '{}'", d.name, d.label); }

// One row for one kind (corrected or not) of one memory controller.
void edac_row(Evaluation& e, const EdacController& now, bool ue) {
  const char* check = ue ? "memory.edac_ue" : "memory.edac_ce";
  const char* kind = ue ? "uncorrected" : "corrected";
  std::optional<uint64_t> count = ue ? now.ue : now.ce;
  std::string where = now.mc_name.empty() ? now.name : fmt::format("{} ({})", now.name, now.mc_name);
  if (!count) {
    e.unavailable(check, now.name, e.node_ranks(),
                  fmt::format("{}: no {} count{}", where, kind, now.notes.empty() ? "" : ": " + join(now.notes, "; ")));
    return;
  }
  const EdacController* then = find_controller(e.before.edac, now.name);
  std::optional<uint64_t> before = then ? (ue ? then->ue : then->ce) : count;
  uint64_t rise = e.has_trend() && before && *count > *before ? *count - *before : 0;

  std::vector<std::string> dimms, risen;
  for (const EdacDimm& d : now.dimms) {
    auto n = dimm_count(d, ue);
    if (n && *n) dimms.push_back(fmt::format("{} {}", dimm_name(d), *n));
    if (!then || !n || !e.has_trend()) continue;
    auto old =
        std::find_if(then->dimms.begin(), then->dimms.end(), [&](const EdacDimm& x) { return x.name == d.name; });
    auto was = old == then->dimms.end() ? std::optional<uint64_t>(0) : dimm_count(*old, ue);
    if (was && *n > *was) risen.push_back(fmt::format("{} +{}", dimm_name(d), *n - *was));
  }
  CheckState state = ue ? error_count_state(*count, 0) : error_count_state(0, *count);
  std::string detail = fmt::format("{}: {} {} since boot", where, *count, kind);
  if (!dimms.empty()) detail += " (" + join(dimms, ", ") + ")";
  if (rise)
    detail += fmt::format("; +{} {}{}", rise, e.over_interval(), risen.empty() ? "" : ": " + join(risen, ", "));
  else
    detail += "; " + e.quiet("rise");
  if (!now.notes.empty()) detail += "; " + join(now.notes, "; ");
  e.add(check, state, now.name, *count, 0, e.node_ranks(), detail);
}

void evaluate_edac(Evaluation& e) {
  if (!e.after.edac) {
    e.unavailable("memory.edac_ce", "", e.node_ranks(), e.after.edac.error().message);
    e.unavailable("memory.edac_ue", "", e.node_ranks(), e.after.edac.error().message);
    return;
  }
  for (bool ue : {false, true})
    for (const EdacController& mc : *e.after.edac) edac_row(e, mc, ue);
}

void evaluate_tracepoints(Evaluation& e) {
  struct Wanted {
    const char* check;
    const char* tracepoint;
    const char* missing;
  };
  const Wanted wanted[] = {
      {"memory.mce_tracepoint", kMceTracepoint, kMceTracepointMissing},
      {"memory.mc_event_tracepoint", kMcEventTracepoint, kMcEventTracepointMissing},
  };
  for (const Wanted& w : wanted) {
    if (!e.after.tracepoints) {
      e.unavailable(w.check, "", e.node_ranks(), e.after.tracepoints.error().message);
      continue;
    }
    if (e.after.tracepoints->contains(w.tracepoint))
      e.add(w.check, CheckState::ok, "", w.tracepoint, nullptr, e.node_ranks(),
            fmt::format("{} is present in {}: its events can be traced as they happen", w.tracepoint,
                        e.after.tracefs_events));
    else
      e.unavailable(w.check, "", e.node_ranks(),
                    fmt::format("no {} tracepoint in {} ({})", w.tracepoint, e.after.tracefs_events, w.missing));
  }
}

void evaluate_mce_log(Evaluation& e) {
  const auto& log = e.after.kernel_log;
  if (!log) {
    e.unavailable("memory.mce_log", "", e.node_ranks(), log.error().message);
    return;
  }
  uint64_t lines = 0;
  bool uncorrected = false;
  const KernelLogLine* last = nullptr;
  for (const KernelLogLine& line : *log) {
    if (classify_kernel_log_message(line.message) != KernelLogClass::machine_check) continue;
    ++lines;
    uncorrected = uncorrected || is_uncorrected_machine_check(line.message);
    last = &line;
  }
  if (!lines) {
    e.add("memory.mce_log", CheckState::ok, "", 0, 0, e.node_ranks(),
          fmt::format("no machine-check line in the kernel log ({} lines read)", log->size()));
    return;
  }
  e.add("memory.mce_log", uncorrected ? CheckState::fail : CheckState::warn, "", lines, 0, e.node_ranks(),
        fmt::format("{} machine-check line(s) in the kernel log{}; last: {}", lines,
                    uncorrected ? ", some uncorrected" : "", format_kernel_log_line(*last)));
}

}  // namespace

void evaluate_memory_checks(Evaluation& e) {
  evaluate_edac(e);
  evaluate_tracepoints(e);
  evaluate_mce_log(e);
}

}  // namespace slowburn::health_detail
