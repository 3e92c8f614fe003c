// A process in its own mount namespace and root (unshare -m + pivot_root, as
// container runtimes do) cannot steer slowburn to a host file: it loads its
// library, then shadows the library's directory with a tmpfs holding an
// absolute symlink of the library's name to a host file (the canary). A
// path resolved through /proc/PID/root follows that symlink with the
// tracer's root; slowburn must read and attach to the file really mapped.
#include <gtest/gtest.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "core/subprocess.h"
#include "support/test_support.h"

namespace slowburn::container_symlink_test {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using testing::read_text;
using testing::TempDir;
using testing::wait_until;

constexpr char kLibraryDir[] = "/opt/standin";
constexpr char kLibrary[] = "/opt/standin/libmpi.so.99";
constexpr long kCalls = 500;

// Runs inside the new mount namespace: the tiny root (the rank, its stand-in
// libmpi, the host's /usr bound for libc) becomes "/", the old root goes.
constexpr char kLaunchScript[] = R"(set -e
R=$1
mount --bind "$R" "$R"
mount --rbind /usr "$R/usr"
cd "$R"
mkdir -p oldroot
pivot_root . oldroot
mount -t proc proc /proc
umount -l /oldroot
rmdir /oldroot
export LD_LIBRARY_PATH=/opt/standin OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=1 OMPI_MCA_ess_base_jobid=contained
exec /rank /tmp/go "$2" 2
)";

// The tracer's own output said tracing began.
bool tracing_started(const fs::path& output) {
  return read_text(output).find("\"event\":\"tracing\"") != std::string::npos;
}

struct ContainedRank {
  TempDir dir;
  fs::path root = dir / "root";
  fs::path canary = dir / "canary";
  std::optional<Subprocess> process;

  // Builds the root and starts the rank in it; false (with a failure) when
  // the container could not be made.
  bool start() {
    for (const char* sub : {"usr", "opt/standin", "tmp", "proc"}) fs::create_directories(root / sub);
    fs::create_directory_symlink("usr/lib", root / "lib");
    fs::create_directory_symlink("usr/lib64", root / "lib64");
    fs::create_directory_symlink("usr/bin", root / "bin");
    fs::copy_file(testing::target_path("standin/libmpi.so.99"), root / "opt/standin/libmpi.so.99");
    fs::copy_file(testing::target_path("standin_rank"), root / "rank");
    // The same library: had slowburn followed the symlink it would have
    // attached here and counted nothing, with no error to show it.
    fs::copy_file(testing::target_path("standin/libmpi.so.99"), canary);
    std::ofstream(dir / "launch.sh") << kLaunchScript;
    auto child = Subprocess::spawn({"unshare", "-m", "--propagation", "private", "sh", (dir / "launch.sh").string(),
                                    root.string(), std::to_string(kCalls)},
                                   {(dir / "rank.log").string(), {}});
    EXPECT_TRUE(child.ok()) << child.error().message;
    if (!child.ok()) return false;
    process.emplace(std::move(*child));
    fs::path maps = fs::path("/proc") / pid() / "maps";
    bool loaded = wait_until([&] { return read_text(maps).find(kLibrary) != std::string::npos; }, 10s);
    EXPECT_TRUE(loaded) << "the contained rank did not load " << kLibrary << ": " << read_text(dir / "rank.log");
    return loaded;
  }

  // After loading: a tmpfs over the library's directory, holding an
  // absolute symlink of the library's name to the host's canary.
  bool shadow_library() {
    auto nsenter = Subprocess::spawn(
        {"nsenter", "-t", pid(), "-m", "sh", "-c",
         std::string("mount -t tmpfs tmpfs ") + kLibraryDir + " && ln -s " + canary.string() + " " + kLibrary},
        {(dir / "nsenter.log").string(), {}});
    EXPECT_TRUE(nsenter.ok());
    if (!nsenter.ok()) return false;
    auto status = nsenter->wait_for(10s);
    EXPECT_EQ(status, 0) << read_text(dir / "nsenter.log");
    // What a path through the process's root now leads to.
    std::error_code ec;
    fs::path seen = fs::read_symlink(fs::path("/proc") / pid() / "root" / fs::path(kLibrary).relative_path(), ec);
    EXPECT_EQ(seen, canary) << ec.message();
    return status == 0 && seen == canary;
  }

  std::string pid() const { return std::to_string(process->pid()); }
};

// Every open or read of the canary, by anyone, from here on.
class OpenWatch {
 public:
  explicit OpenWatch(const fs::path& file) : fd_(inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {
    EXPECT_GE(fd_, 0);
    EXPECT_GE(inotify_add_watch(fd_, file.c_str(), IN_OPEN | IN_ACCESS), 0);
  }
  ~OpenWatch() { close(fd_); }
  size_t events() const {
    alignas(struct inotify_event) char buffer[4096];
    ssize_t n = read(fd_, buffer, sizeof buffer);
    size_t count = 0;
    for (ssize_t at = 0; n > 0 && at < n;) {
      const auto* event = reinterpret_cast<const struct inotify_event*>(buffer + at);
      ++count;
      at += static_cast<ssize_t>(sizeof(struct inotify_event) + event->len);
    }
    return count;
  }

 private:
  int fd_;
};

TEST(ContainerSymlink, ATracedProcessCannotPointSlowburnAtAHostFile) {
  SKIP_UNLESS_ROOT();
  for (const char* tool : {"unshare", "nsenter", "pivot_root"})
    if (!find_program(tool)) GTEST_SKIP() << tool << " not installed (apt-get install util-linux)";
  ContainedRank rank;
  ASSERT_TRUE(rank.start());
  ASSERT_TRUE(rank.shadow_library());
  OpenWatch watch(rank.canary);

  // Resolution alone (slowburn catalog --pid) reads symbol tables.
  testing::Ran probes = testing::run_slowburn({"catalog", "--pid", rank.pid(), "--json"});
  EXPECT_EQ(probes.status, 0) << probes.output;
  std::string resolved_library;
  for (const auto& j : testing::json_lines(probes.output))
    if (j.value("probe", "") == "mpi.allreduce" && j.value("state", "") == "resolved")
      resolved_library = j.value("library", "");
  EXPECT_EQ(resolved_library, kLibrary) << probes.output;

  fs::path out = rank.dir / "funclat.out";
  auto funclat = Subprocess::spawn(
      {testing::slowburn_binary().string(), "funclat", "--json", "-p", rank.pid(), "mpi:MPI_Allreduce"},
      {out.string(), {}});
  ASSERT_TRUE(funclat.ok());
  ASSERT_TRUE(wait_until([&] { return tracing_started(out); }, 20s)) << read_text(out);
  testing::touch(rank.root / "tmp/go");
  ASSERT_TRUE(rank.process->wait_for(20s).has_value());
  auto status = funclat->wait_for(20s);  // ends on its own once the pid is gone
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(*status, 0) << read_text(out);
  uint64_t calls = 0;
  for (const auto& j : testing::json_lines(read_text(out), "hist")) calls += j["count"].get<uint64_t>();
  EXPECT_EQ(calls, static_cast<uint64_t>(kCalls)) << "the library the process mapped was not the one traced\n"
                                                  << read_text(out);
  EXPECT_EQ(watch.events(), 0u) << "slowburn opened the host file the contained process pointed at";
}

}  // namespace
}  // namespace slowburn::container_symlink_test
