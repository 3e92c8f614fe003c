// The RDMA side of a trace session, in every rank process that loaded the
// libraries: libibverbs' control path (QPs moved to ERR, async errors), its
// data path (per-QP send completion latency, traced from the first QP the
// control path sees in a process: sources/verbs_data_path.h), and NCCL's
// IB transport (per-connection request latency). A connection or QP far
// slower than the job's others, and the control path's events, become
// DeviceEvents joined to the ranks, so a finding can name them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/rank_identity.h"
#include "events/decoder.h"
#include "events/histogram_report.h"
#include "loader/ring_buffer.h"
#include "probes/probe_status.h"
#include "probes/resolver.h"
#include "rdma/ib_connections.h"
#include "rdma/qp_inventory.h"
#include "sources/device_events.h"

namespace slowburn {

class VerbsProgram;
class NcclIbProgram;
class VerbsDataPathTracer;
class RingBufferReader;

// Latency histograms of NCCL IB connections and verbs QPs, one per
// connection, labelled "nccl.ib send #0" or "verbs qp 0x101", with the rank
// of each process that is one.
std::vector<HistogramReport> ib_histograms(const std::vector<IbConnectionView>& views,
                                           const std::map<int32_t, RankIdentity>& ranks);

class RdmaSources {
 public:
  // Loads the programs only when some rank maps the library; statuses()
  // says what became of each probe (one line when no rank maps the library).
  static Result<std::unique_ptr<RdmaSources>> start(const std::vector<RankIdentity>& ranks,
                                                    const std::filesystem::path& proc_root, SymbolCache& symbols,
                                                    const Topology* topology);
  ~RdmaSources();

  // Adds the verbs ring buffer to the session's reader.
  Result<void> add_to(const std::function<Result<void>(int fd, RingBufferReader::Handler handler)>& add);
  // Events since the last call: QP events as they were read, slow NCCL IB
  // connections and QPs as they become slow (checked once a second, each
  // reported once).
  // `final`: check the connections now whatever the period.
  std::vector<DeviceEvent> poll(uint64_t now_ns, bool final = false);
  // The NCCL IB and QP latency histograms per rank and connection, for the end of the session.
  std::vector<HistogramReport> ib_histograms() const;
  // One line per process whose libibverbs calls were traced: its QPs'
  // lifecycle ("rank 1 pid 42 libibverbs: 2 QP(s) created; moved to INIT 2,
  // RTR 2, RTS 2; 2 destroyed"), so a trace says what the verbs probes saw
  // even when nothing went wrong.
  std::vector<std::string> qp_lifecycles() const;
  size_t attached() const { return attached_; }
  const std::vector<ProbeStatus>& statuses() const { return statuses_; }
  // What became of the data path probes since the last call (attached once
  // a rank's first QP is seen).
  std::vector<ProbeStatus> take_new_statuses() { return std::exchange(new_statuses_, {}); }
  uint64_t lost() const;  // verbs records lost or undecodable

 private:
  RdmaSources(const std::vector<RankIdentity>& ranks, const Topology* topology);
  std::optional<int> rank_of(uint32_t pid) const;
  void trace_data_path(int32_t pid, uint64_t qp, uint32_t qp_num);
  void report_slow(const std::vector<IbConnectionStats>& stats, uint64_t now_ns);

  std::map<int32_t, RankIdentity> by_pid_;
  DeviceEventBuilder builder_;
  std::unique_ptr<VerbsProgram> verbs_;
  std::unique_ptr<NcclIbProgram> ib_;
  EventDecoder decoder_;
  QpInventory inventory_;
  std::vector<DeviceEvent> pending_;
  std::set<std::tuple<uint32_t, int, uint64_t>> reported_slow_;  // (pid, direction, comm)
  std::vector<ProbeStatus> statuses_;
  std::vector<ProbeStatus> new_statuses_;
  std::filesystem::path proc_root_;
  std::unique_ptr<VerbsDataPathTracer> data_path_;  // from the first QP seen
  size_t attached_ = 0;
  uint64_t next_ib_check_ns_ = 0;
};

}  // namespace slowburn
