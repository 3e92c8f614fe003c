#include "core/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "core/strings.h"

namespace slowburn {

namespace {
int decode_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}
}  // namespace

Result<Subprocess> Subprocess::spawn(const std::vector<std::string>& argv, const SpawnOptions& options) {
  if (argv.empty()) return make_error("nothing to run");
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  int out = ::open(options.output_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0) return make_sys_error(errno, "cannot open " + options.output_path);
  pid_t pid = fork();
  if (pid < 0) {
    int err = errno;
    close(out);
    return make_sys_error(err, "fork failed");
  }
  if (pid == 0) {
    setpgid(0, 0);
    dup2(out, STDOUT_FILENO);
    dup2(out, STDERR_FILENO);
    // The parent's stop handlers must not leak into the child.
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    for (const std::string& kv : options.extra_env) putenv(const_cast<char*>(kv.c_str()));
    execvp(args[0], args.data());
    _exit(127);
  }
  close(out);
  setpgid(pid, pid);  // also from the parent: no race with an early terminate()
  return Subprocess(pid);
}

Subprocess::Subprocess(Subprocess&& other) noexcept : pid_(other.pid_), status_(other.status_) { other.pid_ = -1; }

Subprocess::~Subprocess() {
  if (pid_ > 0) terminate();
}

void Subprocess::signal(int signo) const {
  if (pid_ > 0) kill(pid_, signo);
}

std::optional<int> Subprocess::wait_for(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!poll() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return poll();
}

std::optional<int> Subprocess::poll() {
  if (status_ || pid_ <= 0) return status_;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) == pid_) status_ = decode_status(status);
  return status_;
}

int Subprocess::terminate(std::chrono::milliseconds grace) {
  if (pid_ <= 0) return -1;
  if (!poll()) {
    kill(-pid_, SIGTERM);
    auto deadline = std::chrono::steady_clock::now() + grace;
    while (!poll() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (!poll()) {
      kill(-pid_, SIGKILL);
      int status = 0;
      if (waitpid(pid_, &status, 0) == pid_) status_ = decode_status(status);
    }
  }
  // Stragglers of the group (ranks whose mpirun is gone) go too.
  kill(-pid_, SIGKILL);
  pid_ = -1;
  return status_.value_or(-1);
}

std::optional<std::string> find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0 ? std::optional(name) : std::nullopt;
  const char* path = std::getenv("PATH");
  for (const std::string& dir : split(path ? path : "/usr/local/bin:/usr/bin:/bin", ':')) {
    std::string candidate = dir + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return std::nullopt;
}

}  // namespace slowburn
