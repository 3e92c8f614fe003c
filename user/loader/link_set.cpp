#include "loader/link_set.h"

#include <bpf/libbpf.h>

#include "loader/link_reaper.h"

namespace slowburn {

LinkSet::LinkSet() = default;
LinkSet::~LinkSet() { clear(); }
LinkSet::LinkSet(LinkSet&&) noexcept = default;

LinkSet& LinkSet::operator=(LinkSet&& other) noexcept {
  if (this != &other) {
    clear();
    links_ = std::move(other.links_);
    uprobes_ = std::move(other.uprobes_);
    next_id_ = other.next_id_;
    reaper_ = std::move(other.reaper_);
  }
  return *this;
}

void LinkSet::add(bpf_link* link) {
  if (link) links_.push_back(link);
}

LinkSet::Id LinkSet::add(std::unique_ptr<UprobeLinks> links) {
  Id id = next_id_++;
  uprobes_.emplace(id, std::move(links));
  return id;
}

void LinkSet::close(Id id) { uprobes_.erase(id); }

void LinkSet::retire(Id id) {
  auto it = uprobes_.find(id);
  if (it == uprobes_.end()) return;
  if (!reaper_) reaper_ = std::make_unique<LinkReaper>();
  reaper_->retire(std::move(it->second));
  uprobes_.erase(it);
}

void LinkSet::clear() {
  reaper_.reset();  // closes what it still holds
  uprobes_.clear();
  for (bpf_link* link : links_) bpf_link__destroy(link);
  links_.clear();
}

}  // namespace slowburn
