#include "support/test_support.h"

#include <bpf/bpf.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/files.h"
#include "core/subprocess.h"

namespace slowburn::testing {

std::filesystem::path target_path(const std::string& name) {
  return std::filesystem::path(SLOWBURN_BUILD_DIR) / "tests/targets" / name;
}

std::filesystem::path slowburn_binary() { return std::filesystem::path(SLOWBURN_BUILD_DIR) / "slowburn"; }

std::string workload_path(const std::string& name) {
  return (std::filesystem::path(SLOWBURN_BUILD_DIR) / "libexec" / name).string();
}

void touch(const std::filesystem::path& path) { std::ofstream(path).put('\n'); }

std::vector<uint32_t> bpf_program_ids_named(const std::string& name) {
  std::vector<uint32_t> ids;
  uint32_t id = 0;
  while (bpf_prog_get_next_id(id, &id) == 0) {
    int fd = bpf_prog_get_fd_by_id(id);
    if (fd < 0) continue;  // freed meanwhile
    bpf_prog_info info{};
    uint32_t len = sizeof(info);
    if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0 && name.compare(0, sizeof(info.name) - 1, info.name) == 0)
      ids.push_back(id);
    close(fd);
  }
  return ids;
}

size_t bpf_links_of_program(const std::string& name) {
  size_t n = 0;
  uint32_t id = 0;
  while (bpf_link_get_next_id(id, &id) == 0) {
    int fd = bpf_link_get_fd_by_id(id);
    if (fd < 0) continue;  // released meanwhile
    bpf_link_info link{};
    uint32_t len = sizeof(link);
    if (bpf_obj_get_info_by_fd(fd, &link, &len) == 0) {
      int prog = bpf_prog_get_fd_by_id(link.prog_id);
      bpf_prog_info info{};
      uint32_t info_len = sizeof(info);
      if (prog >= 0 && bpf_obj_get_info_by_fd(prog, &info, &info_len) == 0 &&
          name.compare(0, sizeof(info.name) - 1, info.name) == 0)
        ++n;
      if (prog >= 0) close(prog);
    }
    close(fd);
  }
  return n;
}

bool in_kernel_matrix_guest() { return (" " + read_text("/proc/cmdline")).find(" sb_suite=") != std::string::npos; }

std::string read_text(const std::filesystem::path& path) {
  auto text = read_file(path);
  return text ? *text : std::string();
}

bool replace_text(const std::filesystem::path& path, const std::string& text) {
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::temp_directory_path(ec);
  if (ec) return false;
  std::string next = (dir / "slowburn-counter-XXXXXX").string();
  int fd = mkstemp(next.data());
  if (fd < 0) return false;
  bool written = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  if (written) std::filesystem::rename(next, path, ec);
  if (!written || ec) unlink(next.c_str());
  return written && !ec;
}

std::vector<nlohmann::json> json_lines(const std::string& text, const std::string& kind) {
  std::vector<nlohmann::json> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded() && (kind.empty() || j.value("kind", "") == kind)) out.push_back(std::move(j));
  }
  return out;
}

bool wait_until(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

Ran run_slowburn(const std::vector<std::string>& args, std::chrono::milliseconds timeout,
                 const std::vector<std::string>& prefix) {
  TempDir dir;
  std::vector<std::string> argv = prefix;
  argv.push_back(slowburn_binary().string());
  argv.insert(argv.end(), args.begin(), args.end());
  auto child = Subprocess::spawn(argv, {(dir / "out").string(), {}});
  EXPECT_TRUE(child.ok());
  Ran ran;
  if (!child) return ran;
  auto status = child->wait_for(timeout);
  EXPECT_TRUE(status.has_value()) << "slowburn did not finish";
  ran.status = status.value_or(-1);
  ran.output = read_text(dir / "out");
  return ran;
}

std::string schema_errors(const std::string& output, const std::string& require_kinds) {
  TempDir dir;
  {
    std::ofstream lines(dir / "lines.jsonl");
    std::istringstream in(output);
    for (std::string line; std::getline(in, line);)
      if (line.starts_with("{")) lines << line << '\n';
  }
  std::vector<std::string> argv = {"python3", std::string(SLOWBURN_SOURCE_DIR) + "/docs/schemas/validate.py"};
  if (!require_kinds.empty()) argv.insert(argv.end(), {"--require-kinds", require_kinds});
  argv.push_back((dir / "lines.jsonl").string());
  auto child = Subprocess::spawn(argv, {(dir / "report").string(), {}});
  if (!child.ok()) return "cannot run docs/schemas/validate.py: " + child.error().message;
  auto status = child->wait_for(std::chrono::seconds(60));
  if (!status) child->terminate();
  return status == 0 ? std::string() : "docs/schemas/validate.py: " + read_text(dir / "report");
}

bool capability_in_bounding_set(int cap) { return prctl(PR_CAPBSET_READ, cap, 0, 0, 0) == 1; }

}  // namespace slowburn::testing
