#include "loader/skeleton.h"

#include <bpf/bpf.h>
#include <fmt/format.h>

#include <algorithm>

#include "core/strings.h"
#include "loader/features.h"
#include "loader/privileges.h"

namespace slowburn {

namespace {

constexpr size_t kVerifierLinesShown = 6;

// The verifier's last words: the lines just before libbpf's "-- END PROG
// LOAD LOG --", where it says what it rejected.
std::vector<std::string> verifier_tail(const std::vector<std::string>& log) {
  auto end = std::find_if(log.begin(), log.end(),
                          [](const std::string& line) { return line.find("END PROG LOAD LOG") != std::string::npos; });
  auto begin = std::find_if(
      log.begin(), end, [](const std::string& line) { return line.find("BEGIN PROG LOAD LOG") != std::string::npos; });
  if (end == log.end() || begin == end) return {};
  std::vector<std::string> body(begin + 1, end);
  std::erase_if(body, [](const std::string& line) { return trim_right(line).empty(); });
  if (body.size() > kVerifierLinesShown) body.erase(body.begin(), body.end() - kVerifierLinesShown);
  return body;
}

}  // namespace

Error explain_open_failure(const std::string& what, int err) {
  return make_sys_error(err, fmt::format("cannot open {} (the object is embedded in slowburn: a build problem, "
                                         "or a libbpf older than the one it was built with)",
                                         what));
}

Error explain_load_failure(const std::string& what, int err, const std::vector<std::string>& log) {
  if (err == EPERM || (err == EACCES && !check_tracing_privileges()))
    return make_sys_error(err, fmt::format("cannot load {}: not allowed ({})", what, tracing_privileges_hint()));
  if (!KernelFeatures::host().btf)
    return make_sys_error(err, fmt::format("cannot load {}: this kernel ({}) has no BTF (/sys/kernel/btf/vmlinux); "
                                           "slowburn's CO-RE programs need CONFIG_DEBUG_INFO_BTF=y",
                                           what, KernelFeatures::host().release));
  std::vector<std::string> tail = verifier_tail(log);
  if (!tail.empty() || err == EACCES || err == EINVAL) {
    std::string said = tail.empty() ? std::string("run with -v for its log") : "it said: " + join(tail, " | ");
    return make_sys_error(
        err, fmt::format("cannot load {}: the kernel verifier rejected them on {} ({}); report this with `uname -r`",
                         what, KernelFeatures::host().release, said));
  }
  return make_sys_error(err, fmt::format("cannot load {}", what));
}

uint32_t bpf_program_id(const bpf_program* program) {
  bpf_prog_info info{};
  uint32_t len = sizeof(info);
  if (bpf_obj_get_info_by_fd(bpf_program__fd(program), &info, &len) != 0) return 0;
  return info.id;
}

}  // namespace slowburn
