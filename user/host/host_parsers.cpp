#include "host/host_parsers.h"

#include <fmt/format.h>

#include "core/cpu_list.h"
#include "core/strings.h"

namespace slowburn {

namespace {

// Lines without their ends; the last one may lack its newline.
std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    if (!trim_right(line).empty()) lines.push_back(trim_right(line));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return lines;
}

// Whitespace-separated words.
std::vector<std::string_view> words_of(std::string_view line) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) words.push_back(line.substr(start, i - start));
  }
  return words;
}

}  // namespace

Result<ProcStat> parse_proc_stat(std::string_view text) {
  size_t open = text.find('(');
  size_t close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open)
    return make_error("no '(comm)' field");
  ProcStat stat;
  stat.comm = std::string(text.substr(open + 1, close - open - 1));
  // After the comm: field 3 (state) is words[0]; minflt is field 10,
  // majflt 12, processor 39 (proc(5)).
  auto words = words_of(trim_right(text.substr(close + 1)));
  auto field = [&](size_t number) -> std::optional<uint64_t> {
    if (number - 3 >= words.size()) return std::nullopt;
    return parse_number<uint64_t>(words[number - 3]);
  };
  auto minflt = field(10), majflt = field(12);
  if (!minflt || !majflt) return make_error("fields minflt (10) and majflt (12) missing or not numbers");
  stat.minflt = *minflt;
  stat.majflt = *majflt;
  if (auto cpu = field(39); cpu && *cpu < 65536) stat.processor = static_cast<int>(*cpu);
  return stat;
}

Result<ProcStatus> parse_proc_status(std::string_view text) {
  ProcStatus status;
  bool switches = false;
  for (std::string_view line : lines_of(text)) {
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view key = line.substr(0, colon);
    auto words = words_of(line.substr(colon + 1));
    if (words.empty()) continue;
    if (key == "voluntary_ctxt_switches" || key == "nonvoluntary_ctxt_switches") {
      auto n = parse_number<uint64_t>(words[0]);
      if (!n) return make_error("{} '{}' is not a number", key, words[0]);
      (key[0] == 'v' ? status.voluntary_ctxt_switches : status.nonvoluntary_ctxt_switches) = *n;
      switches = true;
    } else if (key == "Cpus_allowed_list") {
      auto cpus = parse_cpu_list(words[0]);
      if (!cpus) return make_error("Cpus_allowed_list '{}' is not a CPU list (like 0-3,8)", words[0]);
      status.cpus_allowed = std::set<int>(cpus->begin(), cpus->end());
    } else if (key == "VmSwap") {
      status.vm_swap_kb = parse_number<uint64_t>(words[0]);
    }
  }
  if (!switches) return make_error("no voluntary_ctxt_switches line");
  return status;
}

Result<CgroupMembership> parse_proc_cgroup(std::string_view text) {
  CgroupMembership m;
  for (std::string_view line : lines_of(text)) {
    size_t first = line.find(':');
    size_t second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second == std::string_view::npos) return make_error("'{}' is not 'id:controllers:path'", line);
    std::string_view controllers = line.substr(first + 1, second - first - 1);
    std::string path(line.substr(second + 1));
    if (path.empty() || path[0] != '/') return make_error("'{}': the path must start with '/'", line);
    if (line.substr(0, first) == "0" && controllers.empty()) {
      m.unified = path;
      continue;
    }
    for (const std::string& c : split(controllers, ',')) m.v1[c] = path;
  }
  return m;
}

Result<CpuStat> parse_cpu_stat(std::string_view text) {
  auto keyed = parse_flat_keyed(text);
  if (!keyed) return keyed.error();
  CpuStat stat;
  auto get = [&](const char* key) -> std::optional<uint64_t> {
    auto it = keyed->find(key);
    return it == keyed->end() ? std::nullopt : std::optional<uint64_t>(it->second);
  };
  auto periods = get("nr_periods"), throttled = get("nr_throttled");
  if (!periods || !throttled) return make_error("no nr_periods / nr_throttled (no CFS bandwidth control?)");
  stat.nr_periods = *periods;
  stat.nr_throttled = *throttled;
  if (auto ns = get("throttled_time"))
    stat.throttled_ns = *ns;
  else if (auto us = get("throttled_usec"))
    stat.throttled_ns = *us * 1000;
  return stat;
}

Result<CpuQuota> parse_cpu_max(std::string_view text) {
  auto words = words_of(trim_right(text));
  if (words.empty() || words.size() > 2) return make_error("'{}' is not 'QUOTA PERIOD' (cpu.max)", trim_right(text));
  CpuQuota q;
  if (words.size() == 2) {
    auto period = parse_number<uint64_t>(words[1]);
    if (!period || *period == 0) return make_error("period '{}' is not a positive number", words[1]);
    q.period_us = *period;
  }
  if (words[0] != "max") {
    auto quota = parse_number<uint64_t>(words[0]);
    if (!quota) return make_error("quota '{}' is neither 'max' nor a number", words[0]);
    q.quota_us = *quota;
  }
  return q;
}

Result<CpuQuota> parse_cfs_quota(std::string_view quota_us, std::string_view period_us) {
  auto quota = parse_number<int64_t>(trim_right(quota_us));
  auto period = parse_number<uint64_t>(trim_right(period_us));
  if (!quota || *quota < -1) return make_error("cpu.cfs_quota_us '{}' is not a number or -1", trim_right(quota_us));
  if (!period || *period == 0)
    return make_error("cpu.cfs_period_us '{}' is not a positive number", trim_right(period_us));
  CpuQuota q;
  q.period_us = *period;
  if (*quota >= 0) q.quota_us = static_cast<uint64_t>(*quota);
  return q;
}

Result<std::map<std::string, uint64_t>> parse_flat_keyed(std::string_view text) {
  std::map<std::string, uint64_t> values;
  for (std::string_view line : lines_of(text)) {
    auto words = words_of(line);
    if (words.size() != 2) return make_error("'{}' is not 'key value'", line);
    auto n = parse_number<uint64_t>(words[1]);
    if (!n) return make_error("{}: '{}' is not a number", words[0], words[1]);
    values[std::string(words[0])] = *n;
  }
  return values;
}

Result<Pressure> parse_pressure(std::string_view text) {
  Pressure p;
  bool some = false;
  for (std::string_view line : lines_of(text)) {
    auto words = words_of(line);
    if (words.empty() || (words[0] != "some" && words[0] != "full")) return make_error("'{}' is not a PSI line", line);
    std::optional<double> avg10;
    std::optional<uint64_t> total;
    for (size_t i = 1; i < words.size(); ++i) {
      std::string_view w = words[i];
      if (w.starts_with("avg10=")) {
        // from_chars for double: GCC 12 has it.
        double v = 0;
        auto [end, ec] = std::from_chars(w.data() + 6, w.data() + w.size(), v);
        if (ec == std::errc() && end == w.data() + w.size()) avg10 = v;
      } else if (w.starts_with("total=")) {
        total = parse_number<uint64_t>(w.substr(6));
      }
    }
    if (!avg10 || !total) return make_error("'{}' lacks avg10= or total=", line);
    if (words[0] == "some") {
      p.some_avg10 = *avg10;
      p.some_total_us = *total;
      some = true;
    } else {
      p.full_total_us = *total;
    }
  }
  if (!some) return make_error("no 'some' line");
  return p;
}

}  // namespace slowburn
