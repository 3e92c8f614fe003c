#include "procfs/process_state.h"

#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <charconv>
#include <sstream>
#include <vector>

#include "core/files.h"

namespace slowburn {

Result<ProcessSample> parse_proc_stat(std::string_view line, long ticks_per_s) {
  // comm may hold spaces and parentheses: the fields start after the last ')'.
  size_t close = line.rfind(')');
  if (close == std::string_view::npos || close + 2 >= line.size())
    return make_error("malformed /proc stat line (no ')' before the fields): '{}'", line.substr(0, 80));
  std::vector<std::string_view> fields;  // fields[0] is field 3 (state)
  std::string_view rest = line.substr(close + 2);
  while (!rest.empty()) {
    size_t space = rest.find(' ');
    fields.push_back(rest.substr(0, space));
    if (space == std::string_view::npos) break;
    rest.remove_prefix(space + 1);
  }
  if (fields.size() < 18 || fields[0].size() != 1)
    return make_error("malformed /proc stat line ({} fields after the name, 18 or more expected)", fields.size());
  auto number = [&](size_t field, uint64_t& out) {
    std::string_view f = fields[field - 3];
    return std::from_chars(f.data(), f.data() + f.size(), out).ec == std::errc{};
  };
  ProcessSample s;
  s.state = fields[0][0];
  uint64_t utime = 0, stime = 0, threads = 0;
  if (!number(14, utime) || !number(15, stime) || !number(20, threads))
    return make_error("malformed /proc stat line (utime, stime or num_threads is not a number)");
  s.cpu_ns = (utime + stime) * (1'000'000'000 / static_cast<uint64_t>(ticks_per_s > 0 ? ticks_per_s : 100));
  s.threads = static_cast<int>(threads);
  if (uint64_t code = 0; fields.size() >= 50 && number(52, code)) s.exit_code = static_cast<int>(code);
  return s;
}

std::string syscall_name(long nr) {
#if defined(__x86_64__)
  static constexpr std::pair<long, const char*> kNames[] = {{0, "read"},         {1, "write"},
                                                            {7, "poll"},         {17, "pread64"},
                                                            {19, "readv"},       {23, "select"},
                                                            {34, "pause"},       {35, "nanosleep"},
                                                            {43, "accept"},      {45, "recvfrom"},
                                                            {47, "recvmsg"},     {61, "wait4"},
                                                            {202, "futex"},      {230, "clock_nanosleep"},
                                                            {232, "epoll_wait"}, {270, "pselect6"},
                                                            {271, "ppoll"},      {281, "epoll_pwait"},
                                                            {288, "accept4"},    {441, "epoll_pwait2"},
                                                            {44, "sendto"},      {46, "sendmsg"},
                                                            {20, "writev"},      {247, "waitid"},
                                                            {16, "ioctl"},       {72, "fcntl"},
                                                            {74, "fsync"},       {62, "kill"},
                                                            {3, "close"},        {257, "openat"}};
#elif defined(__aarch64__)
  static constexpr std::pair<long, const char*> kNames[] = {{63, "read"},
                                                            {64, "write"},
                                                            {65, "readv"},
                                                            {66, "writev"},
                                                            {67, "pread64"},
                                                            {72, "pselect6"},
                                                            {73, "ppoll"},
                                                            {22, "epoll_pwait"},
                                                            {98, "futex"},
                                                            {101, "nanosleep"},
                                                            {115, "clock_nanosleep"},
                                                            {202, "accept"},
                                                            {207, "recvfrom"},
                                                            {212, "recvmsg"},
                                                            {206, "sendto"},
                                                            {211, "sendmsg"},
                                                            {260, "wait4"},
                                                            {95, "waitid"},
                                                            {29, "ioctl"},
                                                            {242, "accept4"},
                                                            {441, "epoll_pwait2"},
                                                            {57, "close"},
                                                            {56, "openat"},
                                                            {82, "fsync"}};
#else
  static constexpr std::array<std::pair<long, const char*>, 0> kNames{};
#endif
  for (const auto& [number, name] : kNames)
    if (number == nr) return name;
  return fmt::format("syscall {}", nr);
}

std::string parse_kernel_stack(std::string_view text, size_t frames) {
  std::string out;
  size_t taken = 0;
  while (!text.empty() && taken < frames) {
    size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    // "[<0>] pipe_read+0x2d1/0x3d0": the name between "] " and "+".
    size_t start = line.find("] ");
    if (start == std::string_view::npos) continue;
    std::string_view name = line.substr(start + 2);
    name = name.substr(0, name.find('+'));
    if (name.empty()) continue;
    if (!out.empty()) out += " < ";
    out += name;
    ++taken;
  }
  return out;
}

bool syscall_takes_fd(std::string_view name) {
  static constexpr std::string_view kWithFd[] = {
      "read",    "write",  "pread64", "readv", "writev", "recvfrom",   "recvmsg",     "sendto",
      "sendmsg", "accept", "accept4", "ioctl", "fsync",  "epoll_wait", "epoll_pwait", "epoll_pwait2"};
  for (std::string_view n : kWithFd)
    if (n == name) return true;
  return false;
}

Result<ProcessSample> read_process_sample(const std::filesystem::path& proc_root, int32_t pid) {
  std::filesystem::path dir = proc_root / std::to_string(pid);
  auto stat = read_file(dir / "stat");
  if (!stat) return make_error("pid {} is gone ({} cannot be read)", pid, (dir / "stat").string());
  auto sample = parse_proc_stat(*stat, sysconf(_SC_CLK_TCK));
  if (!sample) return sample.error();
  // Readable by root (ptrace access): left empty otherwise.
  if (auto syscall = read_file(dir / "syscall")) {
    std::istringstream in(*syscall);
    std::string first, arg0;
    in >> first >> arg0;
    long nr = 0;
    if (std::from_chars(first.data(), first.data() + first.size(), nr).ec == std::errc{} && nr >= 0) {
      sample->syscall = nr;
      sample->syscall_name = syscall_name(nr);
      unsigned long fd = 0;
      if (syscall_takes_fd(sample->syscall_name) && arg0.rfind("0x", 0) == 0 &&
          std::from_chars(arg0.data() + 2, arg0.data() + arg0.size(), fd, 16).ec == std::errc{} && fd < (1u << 20)) {
        std::error_code ec;
        auto target = std::filesystem::read_symlink(dir / "fd" / std::to_string(fd), ec);
        if (!ec) sample->waits_on = target.string();
      }
    }
  }
  if (auto wchan = read_file(dir / "wchan"); wchan && *wchan != "0") sample->wchan = *wchan;
  if (auto stack = read_file(dir / "stack")) sample->kernel_stack = parse_kernel_stack(*stack);
  return sample;
}

}  // namespace slowburn
