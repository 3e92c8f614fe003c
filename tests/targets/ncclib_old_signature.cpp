// NCCL <= 2.23's ncclIbIsend: `int size`, no phandle. slowburn must call
// this unsupported instead of decoding it with the 2.26 layout.
typedef int ncclResult_t;
__attribute__((visibility("hidden"), noinline, used)) ncclResult_t ncclIbIsend(void* sendComm, void* data, int size,
                                                                               int tag, void* mhandle, void** request) {
  asm volatile("" ::"r"(sendComm), "r"(data), "r"(size), "r"(tag), "r"(mhandle) : "memory");
  *request = nullptr;
  return 0;
}
extern "C" int sb_old_entry(void) {
  void* r;
  return ncclIbIsend(nullptr, nullptr, 0, 0, nullptr, &r);
}
