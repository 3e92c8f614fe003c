// The probe mode's JSON-lines event log: whole lines appended to
// DIR/slowburn.jsonl; when the next line would pass max_bytes the file is
// renamed to .1 (older ones shift up, the oldest beyond `keep` goes) and a
// new one starts. Rotation happens between lines and every line is written
// before it returns, so nothing is lost or torn. reopen() (SIGHUP) closes and
// opens the path again, for an external logrotate that moved the file.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <streambuf>
#include <string>
#include <string_view>

#include "core/error.h"

namespace slowburn {

class RotatingLog {
 public:
  static Result<std::unique_ptr<RotatingLog>> open(const std::filesystem::path& dir, uint64_t max_bytes, int keep,
                                                   std::string name = "slowburn.jsonl");
  ~RotatingLog();
  RotatingLog(const RotatingLog&) = delete;
  RotatingLog& operator=(const RotatingLog&) = delete;

  // One line, with or without its '\n'.
  Result<void> write_line(std::string_view line);
  Result<void> reopen();
  void flush();

  std::filesystem::path path() const { return dir_ / name_; }
  uint64_t lines() const { return lines_; }
  uint64_t rotations() const { return rotations_; }
  uint64_t errors() const { return errors_; }

 private:
  RotatingLog(std::filesystem::path dir, std::string name, uint64_t max_bytes, int keep)
      : dir_(std::move(dir)), name_(std::move(name)), max_bytes_(max_bytes), keep_(keep) {}
  Result<void> open_file();
  Result<void> rotate();

  std::filesystem::path dir_;
  std::string name_;
  uint64_t max_bytes_;
  int keep_;
  FILE* file_ = nullptr;
  uint64_t size_ = 0;
  uint64_t lines_ = 0;
  uint64_t rotations_ = 0;
  uint64_t errors_ = 0;
};

// A streambuf that hands whole lines to a RotatingLog: lets any ostream
// writer (the JSON sink) feed the log without knowing about rotation.
class LogLineBuf : public std::streambuf {
 public:
  explicit LogLineBuf(RotatingLog& log) : log_(log) {}

 protected:
  int_type overflow(int_type ch) override;
  std::streamsize xsputn(const char* s, std::streamsize n) override;

 private:
  RotatingLog& log_;
  std::string pending_;
};

}  // namespace slowburn
