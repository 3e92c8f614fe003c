// The probe mode reads cumulative sums from the kernel; each consumer (the
// overhead budget every interval, the detector every window) needs what
// accrued since its own last reading. One baseline per consumer, one place
// where differences are taken.
#pragma once

#include <cstdint>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "loader/collagg_program.h"

namespace slowburn {

class CountsBaseline {
 public:
  // What accrued since the last reading, entry by entry (in the reading's
  // order); the reading becomes the new base.
  std::vector<AggCounts> advance(const std::vector<AggStats>& reading);
  // What accrued for an entry since the last reading, without moving the base
  // (a process that ended between readings).
  AggCounts since(const AggStats& stats) const;
  // The process is gone: its entries leave the base.
  void forget(int32_t pid);

 private:
  using Key = std::tuple<uint32_t, uint32_t, uint32_t>;  // (tgid, probe, communicator slot)
  static Key key_of(const AggStats& s) { return {s.tgid, s.probe_id, s.comm_slot}; }
  std::map<Key, AggCounts> base_;
};

}  // namespace slowburn
