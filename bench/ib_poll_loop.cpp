// Benchmark target for the ncclIbTest probe: a hidden C++ ncclIbTest with
// NCCL 2.26-2.28's signature (so the catalog's probe resolves in this
// executable), called CALLS times on a request that is never done, as
// NCCL's proxy thread polls. Prints the mean wall time per call.
//
//   ib_poll_loop CALLS   ->   "ns_per_call 1234.5"
#include <time.h>

#include <cstdio>
#include <cstdlib>

__attribute__((visibility("hidden"), noinline, used)) int ncclIbTest(void* request, int* done, int* sizes) {
  asm volatile("" ::"r"(request), "r"(sizes) : "memory");
  *done = 0;
  return 0;
}

int main(int argc, char** argv) {
  long calls = argc > 1 ? std::atol(argv[1]) : 100000;
  int done = 0, acc = 0;
  static char request;
  timespec start, end;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (long i = 0; i < calls; ++i) acc += ncclIbTest(&request, &done, nullptr) + done;
  clock_gettime(CLOCK_MONOTONIC, &end);
  std::printf("ns_per_call %.1f\n",
              ((end.tv_sec - start.tv_sec) * 1e9 + (end.tv_nsec - start.tv_nsec)) / static_cast<double>(calls));
  return acc;
}
