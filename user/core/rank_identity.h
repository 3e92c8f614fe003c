// Who a traced process is in its job. The one rank-identity type: every layer
// (detector, sinks, CLI) names a rank through this.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace slowburn {

struct RankIdentity {
  int32_t pid = 0;
  int rank = -1;                  // global rank
  std::optional<int> local_rank;  // rank on this node
  std::optional<int> world_size;
  std::string launcher;  // where the rank came from: openmpi, pmix, pmi, torchrun, slurm
  std::string job;       // the launcher's job id ("" when it sets none)
  std::string host;
  std::string command;
  std::string cuda_visible_devices;  // GPU hint
  std::string nccl_ib_hca;           // NIC hint
  std::string ucx_net_devices;       // NIC hint of a rank on UCX (Open MPI's pml ucx), where NCCL_IB_HCA is unset
  // In analyze, where another node's process had the same pid and this one
  // was given another (`pid`, unique across the merged job): its pid on
  // its own node, the one a person looks up there; 0 where `pid` is it.
  int32_t node_pid = 0;
};

// Its pid on its own node (node_pid where analyze gave it another).
int32_t own_pid(const RankIdentity& id);

// "rank 3 (pid 4242)": how every output names a rank (by its pid on its
// own node).
std::string rank_label(const RankIdentity& id);

// This node's name: what a rank's `host` is by default ("unknown" if unset).
std::string hostname();
// "rank 3 (pid 4242 on node-b)": across nodes (analyze), with its host; rank_label without one.
std::string rank_node_label(const RankIdentity& id);

}  // namespace slowburn
