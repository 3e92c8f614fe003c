// A stand-in for NCCL's IB transport: C++ functions with the exact
// signatures (and so the exact mangled names) of NCCL 2.26-2.28's
// ncclIbIsend / ncclIbIrecv / ncclIbIflush / ncclIbTest, hidden as in the
// real libnccl.so.2, and an exported driver that posts requests and polls
// them to completion the way NCCL's proxy thread does. Built as
// ncclib/libnccl.so.2 so probes resolve it by name from /proc/PID/maps.
#include <time.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>

#define HIDDEN __attribute__((visibility("hidden"), noinline, used))

namespace {

struct Request {
  long ready_at_ns;
  int polls_left;
  int n = 0;             // receives: buffers
  int received[8] = {};  // what "arrives" in each: half of what was posted
};

long now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

long g_delay_ns = 0;
int g_polls = 0;
int g_deferred_every = 0;  // every Nth isend first finds the peer not ready
long g_isend_calls = 0;

Request* new_request() { return new Request{now_ns() + g_delay_ns, g_polls}; }

}  // namespace

typedef int ncclResult_t;

HIDDEN ncclResult_t ncclIbIsend(void* sendComm, void* data, size_t size, int tag, void* mhandle, void* phandle,
                                void** request) {
  asm volatile("" ::"r"(sendComm), "r"(data), "r"(size), "r"(tag), "r"(mhandle), "r"(phandle) : "memory");
  ++g_isend_calls;
  *request = g_deferred_every && g_isend_calls % g_deferred_every == 0 ? nullptr : new_request();
  return 0;
}

HIDDEN ncclResult_t ncclIbIrecv(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** mhandles,
                                void** phandles, void** request) {
  asm volatile("" ::"r"(recvComm), "r"(n), "r"(data), "r"(sizes), "r"(tags), "r"(mhandles), "r"(phandles) : "memory");
  Request* r = new_request();
  r->n = n < 8 ? n : 8;
  for (int i = 0; i < r->n; ++i) r->received[i] = static_cast<int>(sizes[i] / 2);
  *request = r;
  return 0;
}

HIDDEN ncclResult_t ncclIbIflush(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request) {
  asm volatile("" ::"r"(recvComm), "r"(n), "r"(data), "r"(sizes), "r"(mhandles) : "memory");
  *request = new_request();
  return 0;
}

HIDDEN ncclResult_t ncclIbTest(void* request, int* done, int* sizes) {
  auto* r = static_cast<Request*>(request);
  if (r->polls_left > 0 || now_ns() < r->ready_at_ns) {
    if (r->polls_left > 0) --r->polls_left;
    *done = 0;
    return 0;
  }
  *done = 1;
  // As NCCL: a receive reports the size that arrived in each buffer.
  if (sizes)
    for (int i = 0; i < r->n; ++i) sizes[i] = r->received[i];
  delete r;
  return 0;
}

namespace {
void poll_until_done(void* request) {
  int done = 0;
  int sizes[8] = {};
  while (!done) {
    ncclIbTest(request, &done, sizes);
    if (!done) usleep(50);
  }
}
}  // namespace

// Posts `sends` isends alternating between two connections (sizes
// base*(i+1)), `recvs` irecvs of two buffers (base and 2*base) into which
// half of that arrives, `flushes` iflushes of 4 bytes; each completes after
// at least `delay_us` and `polls` not-done polls.
extern "C" __attribute__((visibility("default"))) int sb_run_ib_requests(int sends, int recvs, int flushes, int polls,
                                                                         long delay_us, size_t base,
                                                                         int deferred_every) {
  g_delay_ns = delay_us * 1000;
  g_polls = polls;
  g_deferred_every = deferred_every;
  static char comm_a, comm_b, comm_r;
  char buffer[16];
  for (int i = 0; i < sends; ++i) {
    void* request = nullptr;
    while (!request) ncclIbIsend(i % 2 ? &comm_b : &comm_a, buffer, base * (i + 1), i, nullptr, nullptr, &request);
    poll_until_done(request);
  }
  for (int i = 0; i < recvs; ++i) {
    void* request = nullptr;
    void* data[2] = {buffer, buffer};
    size_t sizes[2] = {base, 2 * base};
    int tags[2] = {i, i};
    ncclIbIrecv(&comm_r, 2, data, sizes, tags, nullptr, nullptr, &request);
    poll_until_done(request);
  }
  for (int i = 0; i < flushes; ++i) {
    void* request = nullptr;
    void* data[1] = {buffer};
    int sizes[1] = {4};
    ncclIbIflush(&comm_r, 1, data, sizes, nullptr, &request);
    poll_until_done(request);
  }
  return 0;
}
