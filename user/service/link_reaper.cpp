#include "service/link_reaper.h"

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
    std::unique_ptr<UprobeLinks> links = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    links.reset();  // the slow part, outside the lock
    lock.lock();
  }
}

}  // namespace slowburn
