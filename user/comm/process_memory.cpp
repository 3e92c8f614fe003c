#include "comm/process_memory.h"

#include <fcntl.h>
#include <unistd.h>

namespace slowburn {

namespace {
class ProcMemFile : public ProcessMemory {
 public:
  explicit ProcMemFile(int fd) : fd_(fd) {}
  ~ProcMemFile() override {
    if (fd_ >= 0) close(fd_);
  }
  bool read(uint64_t address, void* out, size_t size) const override {
    if (fd_ < 0 || address == 0) return false;
    ssize_t n = pread(fd_, out, size, static_cast<off_t>(address));
    return n == static_cast<ssize_t>(size);
  }

 private:
  int fd_;
};
}  // namespace

std::unique_ptr<ProcessMemory> open_process_memory(const std::filesystem::path& proc_root, int32_t pid) {
  int fd = open((proc_root / std::to_string(pid) / "mem").c_str(), O_RDONLY | O_CLOEXEC);
  return std::make_unique<ProcMemFile>(fd);
}

}  // namespace slowburn
