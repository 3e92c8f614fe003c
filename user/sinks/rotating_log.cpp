#include "sinks/rotating_log.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <system_error>

namespace slowburn {

Result<std::unique_ptr<RotatingLog>> RotatingLog::open(const std::filesystem::path& dir, uint64_t max_bytes, int keep,
                                                       std::string name) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return make_error("cannot create the log directory {}: {} (choose another with --log-dir)", dir.string(),
                      ec.message());
  std::unique_ptr<RotatingLog> log(new RotatingLog(dir, std::move(name), max_bytes, std::max(keep, 1)));
  if (auto ok = log->open_file(); !ok) return ok.error();
  return log;
}

RotatingLog::~RotatingLog() {
  if (file_) fclose(file_);
}

Result<void> RotatingLog::open_file() {
  if (file_) fclose(file_);
  file_ = fopen(path().c_str(), "ae");
  if (!file_) return make_sys_error(errno, fmt::format("cannot open the event log {}", path().string()));
  struct stat st {};
  size_ = fstat(fileno(file_), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
  return {};
}

Result<void> RotatingLog::rotate() {
  if (file_) {
    fclose(file_);
    file_ = nullptr;
  }
  std::error_code ec;
  std::filesystem::remove(dir_ / fmt::format("{}.{}", name_, keep_), ec);
  for (int i = keep_ - 1; i >= 1; --i) {
    auto from = dir_ / fmt::format("{}.{}", name_, i);
    if (std::filesystem::exists(from, ec)) std::filesystem::rename(from, dir_ / fmt::format("{}.{}", name_, i + 1), ec);
  }
  std::filesystem::rename(path(), dir_ / fmt::format("{}.1", name_), ec);
  ++rotations_;
  return open_file();
}

Result<void> RotatingLog::write_line(std::string_view line) {
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  uint64_t bytes = line.size() + 1;
  if (!file_) {  // a reopen that failed: try again, the directory may be back
    if (auto ok = open_file(); !ok) {
      ++errors_;
      return ok;
    }
  }
  if (size_ > 0 && size_ + bytes > max_bytes_) {
    if (auto ok = rotate(); !ok) {
      ++errors_;
      return ok;
    }
  }
  if (fwrite(line.data(), 1, line.size(), file_) != line.size() || fputc('\n', file_) == EOF || fflush(file_) != 0) {
    ++errors_;
    return make_sys_error(errno, fmt::format("cannot write the event log {}", path().string()));
  }
  size_ += bytes;
  ++lines_;
  return {};
}

Result<void> RotatingLog::reopen() { return open_file(); }

void RotatingLog::flush() {
  if (file_) fflush(file_);
}

LogLineBuf::int_type LogLineBuf::overflow(int_type ch) {
  if (ch == traits_type::eof()) return traits_type::not_eof(ch);
  char c = traits_type::to_char_type(ch);
  xsputn(&c, 1);
  return ch;
}

std::streamsize LogLineBuf::xsputn(const char* s, std::streamsize n) {
  for (std::streamsize i = 0; i < n; ++i) {
    if (s[i] != '\n') {
      pending_.push_back(s[i]);
      continue;
    }
    (void)log_.write_line(pending_);  // failures are counted by the log
    pending_.clear();
  }
  return n;
}

}  // namespace slowburn
