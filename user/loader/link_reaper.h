// Detaching a uprobe waits for an RCU grace period in the kernel (tens of
// ms per link here); a job of 8 ranks leaves ~130 links to close. Closing
// them inline would stall the service for seconds at every job end, so
// retired links are closed off the service's loop, up to kParallelCloses
// at a time (their grace periods overlap).
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "loader/uprobe_links.h"

namespace slowburn {

class LinkReaper {
 public:
  LinkReaper();
  ~LinkReaper();  // closes whatever is still queued
  LinkReaper(const LinkReaper&) = delete;
  LinkReaper& operator=(const LinkReaper&) = delete;

  void retire(std::unique_ptr<UprobeLinks> links);

 private:
  static constexpr size_t kParallelCloses = 16;
  void run();
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::unique_ptr<UprobeLinks>> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace slowburn
