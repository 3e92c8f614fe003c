// The probe service's JSON-lines event log: the trace's JSON sink over a
// rotating file, plus the service's own lines (ranks starting and ending,
// budget actions, the stop line).
#pragma once

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "core/error.h"
#include "sinks/json_sink.h"
#include "sinks/rotating_log.h"

namespace slowburn {

class EventLog {
 public:
  // Nullptr (no log) when `dir` is empty.
  static Result<std::unique_ptr<EventLog>> open(const std::filesystem::path& dir, uint64_t max_bytes, int keep,
                                                const std::string& host);
  Sink& sink() { return sink_; }
  // One of the service's own lines, stamped with ts and host.
  void line(nlohmann::json j);
  RotatingLog& file() { return *file_; }

 private:
  EventLog(std::unique_ptr<RotatingLog> file, const std::string& host);
  std::unique_ptr<RotatingLog> file_;
  LogLineBuf buf_;
  std::ostream out_;
  JsonSink sink_;
  std::string host_;
};

}  // namespace slowburn
