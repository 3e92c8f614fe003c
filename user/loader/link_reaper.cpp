#include "loader/link_reaper.h"

#include <algorithm>
#include <vector>

namespace slowburn {

LinkReaper::LinkReaper() : thread_([this] { run(); }) {}

LinkReaper::~LinkReaper() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void LinkReaper::retire(std::unique_ptr<UprobeLinks> links) {
  if (!links) return;
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(links));
  }
  wake_.notify_one();
}

void LinkReaper::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, nothing left
    std::deque<std::unique_ptr<UprobeLinks>> batch;
    batch.swap(queue_);
    lock.unlock();
    // The slow part, outside the lock. Each close waits for a grace period
    // of its own; closed one after another, a job's links (one set per
    // probe per rank: 32 for 2 ranks of 8 MPI probes) took seconds. Closed
    // side by side, their grace periods overlap.
    std::vector<std::thread> closers;
    while (!batch.empty()) {
      size_t n = std::min(batch.size(), kParallelCloses);
      for (size_t i = 0; i < n; ++i) {
        closers.emplace_back([links = std::move(batch.front())]() mutable { links.reset(); });
        batch.pop_front();
      }
      for (std::thread& t : closers) t.join();
      closers.clear();
    }
    lock.lock();
  }
}

}  // namespace slowburn
