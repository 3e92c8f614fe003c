// Shared by the evaluator's files (health_checks*.cpp): who a row concerns,
// how rows are made, how a reading pair is described.
#pragma once

#include <string>
#include <vector>

#include "health/health_checks.h"

namespace slowburn::health_detail {

class Evaluation {
 public:
  Evaluation(const HealthSnapshot& before, const HealthSnapshot& after, const HealthContext& context);

  const HealthSnapshot& before;
  const HealthSnapshot& after;
  const HealthContext& context;
  std::vector<CheckRow> rows;

  // Every rank on the node (node-wide rows), sorted.
  std::vector<int> node_ranks() const { return node_ranks_; }
  // The ranks whose processes use the device (a BDF or a kernel name) or anything below it.
  std::vector<int> device_ranks(const std::string& device) const;
  // Counters rose between two readings only when there were two.
  bool has_trend() const { return after.ts_ns > before.ts_ns; }
  double interval_s() const { return static_cast<double>(after.ts_ns - before.ts_ns) / 1e9; }
  // "in 1.0 s" / "(one reading: no rise measured)"
  std::string over_interval() const;
  // "no rise in 1.0 s" / "one reading: no rise measured"
  std::string quiet(std::string_view what) const;

  CheckRow& add(std::string check, CheckState state, std::string device, nlohmann::json value, nlohmann::json threshold,
                std::vector<int> ranks, std::string detail);
  CheckRow& unavailable(std::string check, std::string device, std::vector<int> ranks, std::string reason);

 private:
  std::vector<int> node_ranks_;
};

// One severity rule for every error counter of every device (GPU ECC
// Xids, host EDAC, PCIe AER): an uncorrectable error counted since boot
// fails, correctable history warns (the row says its count), none is ok. A
// rise during the reading is judged by the same rule, and said.
CheckState error_count_state(uint64_t uncorrectable, uint64_t correctable);

// One file per domain.
void evaluate_gpu_checks(Evaluation& e);     // gpu.xid, gpu.xid_ecc
void evaluate_pcie_checks(Evaluation& e);    // pcie.link, pcie.aer
void evaluate_memory_checks(Evaluation& e);  // memory.edac_*, memory.*tracepoint, memory.mce_log
void evaluate_cpu_checks(Evaluation& e);     // cpu.*
void evaluate_nic_checks(Evaluation& e);     // nic.*, rdma.*
void evaluate_kernel_checks(Evaluation& e);  // clock.*, kernel.*

}  // namespace slowburn::health_detail
