// One MPI communicator as a rank's memory describes it, whatever library
// made it (comm/ompi_comm.h, comm/mpich_comm.h): enough to name it across
// processes with no clock and without having seen it created.
#pragma once

#include <cstdint>
#include <vector>

namespace slowburn {

struct MpiComm {
  uint32_t cid = 0;  // the context id: equal on every member (disjoint children of a split share it)
  int my_rank = -1;
  std::vector<int> members;  // MPI_COMM_WORLD ranks, in communicator-rank order
};

}  // namespace slowburn
