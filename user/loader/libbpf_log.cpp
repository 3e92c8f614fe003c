#include "loader/libbpf_log.h"

#include <bpf/libbpf.h>

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <mutex>

namespace slowburn {

namespace {

std::atomic<bool> g_verbose{false};
thread_local std::vector<std::string>* t_capture = nullptr;

int print_libbpf(enum libbpf_print_level level, const char* format, va_list args) {
  bool verbose = g_verbose.load(std::memory_order_relaxed);
  if (level != LIBBPF_WARN && !verbose) return 0;
  if (t_capture) {
    va_list copy;
    va_copy(copy, args);
    char line[1024];
    int n = vsnprintf(line, sizeof(line), format, copy);
    va_end(copy);
    if (n > 0) {
      std::string text(line, std::min<size_t>(static_cast<size_t>(n), sizeof(line) - 1));
      while (!text.empty() && text.back() == '\n') text.pop_back();
      t_capture->push_back(std::move(text));
    }
    // The error carries what matters; the whole log only when asked for.
    if (!verbose) return 0;
  }
  return vfprintf(stderr, format, args);
}

void install_once() {
  static std::once_flag once;
  std::call_once(once, [] { libbpf_set_print(print_libbpf); });
}

}  // namespace

void set_libbpf_verbose(bool verbose) {
  g_verbose.store(verbose);
  install_once();
}

LibbpfLogCapture::LibbpfLogCapture() {
  install_once();
  t_capture = &lines_;
}

LibbpfLogCapture::~LibbpfLogCapture() { t_capture = nullptr; }

}  // namespace slowburn
