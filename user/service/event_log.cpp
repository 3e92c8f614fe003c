#include "service/event_log.h"

#include "core/clock.h"

namespace slowburn {

Result<std::unique_ptr<EventLog>> EventLog::open(const std::filesystem::path& dir, uint64_t max_bytes, int keep,
                                                 const std::string& host) {
  if (dir.empty()) return std::unique_ptr<EventLog>();
  auto log = RotatingLog::open(dir, max_bytes, keep);
  if (!log) return log.error();
  return std::unique_ptr<EventLog>(new EventLog(std::move(*log), host));
}

EventLog::EventLog(std::unique_ptr<RotatingLog> file, const std::string& host)
    : file_(std::move(file)), buf_(*file_), out_(&buf_), sink_(out_, host, wall_offset_ns()), host_(host) {}

void EventLog::line(nlohmann::json j) {
  j["ts"] = unix_now_s();
  j["host"] = host_;
  out_ << j.dump() << '\n';
}

}  // namespace slowburn
