// libFuzzer target for the parsers of `slowburn health` (health/health_parsers.h,
// net/dcb.h): any bytes, no crash, no hang, no out-of-bounds read (ASan and
// UBSan, `make fuzz`), and what they return holds together: a CPU list is
// sorted, unique, bounded and survives format/parse; a kernel log line has
// a message; a taint decodes one flag per set bit.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string_view>

#include "health/health_parsers.h"
#include "net/dcb.h"
#include "nvidia/xid.h"
#include "nvidia/xid_catalog.h"

using namespace slowburn;

namespace {

void check_cpu_list(std::string_view text) {
  auto cpus = parse_cpu_list(text);
  if (!cpus) return;
  for (size_t i = 0; i < cpus->size(); ++i) {
    if ((*cpus)[i] < 0 || (*cpus)[i] > kMaxCpuId) std::abort();
    if (i && (*cpus)[i] <= (*cpus)[i - 1]) std::abort();
  }
  if (parse_cpu_list(format_cpu_list(*cpus)) != cpus) std::abort();
}

void check_log_line(std::string_view text) {
  auto line = parse_kernel_log_line(text);
  if (!line) return;
  if (line->message.empty()) std::abort();
  if (line->level && (*line->level < 0 || *line->level > 7)) std::abort();
  (void)format_kernel_log_line(*line);
  KernelLogClass cls = classify_kernel_log_message(line->message);
  if (cls == KernelLogClass::xid && !looks_like_xid_line(line->message)) std::abort();
  if (cls == KernelLogClass::xid)
    if (auto xid = parse_xid_line(line->message)) (void)xid_family(xid->code, xid->nvswitch);
  (void)is_hard_lockup_message(line->message);
  (void)is_uncorrected_machine_check(line->message);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  check_cpu_list(text);
  // A log file is read line by line: every line of the input.
  for (size_t start = 0; start <= text.size();) {
    size_t end = text.find('\n', start);
    check_log_line(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  (void)parse_counter(text);
  (void)parse_ib_rate_gbps(text);
  (void)parse_ib_state_name(text);
  (void)time_daemon_name(text);
  (void)comm_from_stat(text);
  if (auto tainted = parse_counter(text)) {
    auto flags = decode_taint(*tainted);
    if (flags.size() != static_cast<size_t>(std::popcount(*tainted))) std::abort();
    if (taint_letters(flags).size() != flags.size()) std::abort();
  }
  uint64_t bits = 0;
  std::memcpy(&bits, data, std::min(size, sizeof(bits)));
  if (decode_taint(bits).size() != static_cast<size_t>(std::popcount(bits))) std::abort();
  // The DCB netlink reply parser on raw bytes, as the kernel's reply would come.
  (void)parse_dcb_ieee_reply(std::as_bytes(std::span(data, size)), "fuzz0");
  return 0;
}
