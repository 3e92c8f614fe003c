// RDMA NIC counters -> rates and fabric events: PFC pause storms, ECN/CNP
// congestion, transport retransmissions, link flaps and link errors.
// Pure: fed snapshots (sysfs counters, hw_counters and ethtool statistics
// merged per NIC port), no files, no ioctls.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "sysfs/rdma_ports.h"

namespace slowburn {

// Defaults and why (docs/fabric.md "Fabric thresholds" says the same):
struct FabricThresholds {
  // A priority paused for this share of the interval. Lossless RoCE pauses
  // in bursts of microseconds; a healthy port stays far below 1% paused.
  // 10% paused is a link running at <= 90% of its rate because something
  // downstream cannot drain: the start of a pause cascade.
  double pause_share = 0.10;
  // CNPs per second sent (np_cnp_sent: we see ECN-marked traffic) or acted
  // on (rp_cnp_handled: our senders are being slowed). A quiet fabric sends
  // none; DCQCN lets a QP see one every few microseconds under congestion,
  // so a sustained thousand per second is congestion, not noise.
  double cnp_per_s = 1000;
  // Retransmission-class counters (out_of_sequence, packet_seq_err,
  // local_ack_timeout_err, roce_adp_retrans; rxe: completer_retry_err,
  // rcvd_seq_err, out_of_seq_request) per second. A lossless fabric
  // has none; each local ACK timeout alone stalls a QP for milliseconds.
  double retrans_per_s = 1;
  // Physical-layer errors (symbol_error, port_rcv_errors,
  // link_error_recovery, local_link_integrity_errors,
  // rx_pcs_symbol_err_phy: after FEC) per interval. Any is a bad cable,
  // transceiver or port.
  uint64_t link_errors = 1;
};

struct FabricEvent {
  std::string
      type;  // pfc.pause_storm, ecn.cnp_surge, rdma.retrans, link.flap, link.errors, nic.gone, nic.back, counters.reset
  std::string severity;  // error, warning, info
  uint64_t ts_ns = 0;
  std::string nic;
  uint32_t port = 1;
  std::string netdev;
  std::string device;
  std::string priority;  // pause storms: "0".."7" or "global"; else empty
  // pause storms: "rx" (the peer paused us) or "tx" (we paused the peer);
  // rdma.retrans: "tx" (this port's sends were resent) or "rx" (only gaps
  // in what it received: a peer's packets lost on their way here)
  std::string direction;
  double value = 0;  // what crossed the threshold: share, per second or count
  double threshold = 0;
  std::map<std::string, uint64_t> deltas;  // the counters behind it, over the interval
  std::string summary;
};

struct PauseRates {
  double rx_share = 0, tx_share = 0;  // of the interval, from *_pause_duration (microseconds)
  double rx_frames_per_s = 0, tx_frames_per_s = 0;
};

// The latest interval of one NIC port.
struct NicRates {
  std::string nic;
  uint32_t port = 1;
  std::string netdev;
  std::string device;
  double interval_s = 0;
  std::optional<double> tx_bytes_per_s, rx_bytes_per_s;
  std::map<std::string, PauseRates> pause;  // by priority ("0".."7", "global"), only those that moved or exist
  double cnp_sent_per_s = 0, cnp_handled_per_s = 0, ecn_marked_per_s = 0;
  double retrans_per_s = 0;
  uint64_t link_errors = 0, link_downs = 0;
};

class FabricMonitor {
 public:
  explicit FabricMonitor(FabricThresholds thresholds = {}) : thresholds_(thresholds) {}

  // The first snapshot of a port is its baseline (no events); each later
  // one is compared with the one before.
  std::vector<FabricEvent> update(const FabricSnapshot& snapshot);
  // Every port seen in the last snapshot with its latest interval (ports
  // seen once have no interval yet and are absent).
  const std::vector<NicRates>& rates() const { return rates_; }
  // Notes from the samples, each once.
  std::vector<std::string> take_new_notes();

 private:
  struct PortState {
    NicSample sample;
    uint64_t ts_ns = 0;
    bool present = true;
  };
  using Key = std::pair<std::string, uint32_t>;

  std::vector<FabricEvent> compare(const PortState& before, const NicSample& now, uint64_t ts_ns, NicRates& rates);

  FabricThresholds thresholds_;
  std::map<Key, PortState> ports_;
  std::vector<NicRates> rates_;
  std::set<std::string> notes_seen_;
  std::vector<std::string> new_notes_;
};

}  // namespace slowburn
