// A sparse address space standing in for a rank's memory (comm/process_memory.h):
// the memory readers' unit tests lay out objects in it byte by byte.
#pragma once

#include <cstdint>
#include <map>

#include "comm/process_memory.h"

namespace slowburn::testing {

class FakeMemory : public ProcessMemory {
 public:
  bool read(uint64_t address, void* out, size_t size) const override {
    for (size_t i = 0; i < size; ++i) {
      auto it = bytes_.find(address + i);
      if (it == bytes_.end()) return false;
      static_cast<unsigned char*>(out)[i] = it->second;
    }
    return true;
  }
  void write(uint64_t address, const void* data, size_t size) {
    for (size_t i = 0; i < size; ++i) bytes_[address + i] = static_cast<const unsigned char*>(data)[i];
  }
  template <typename T>
  void put(uint64_t address, T value) {
    write(address, &value, sizeof(value));
  }
  void zero(uint64_t address, size_t size) {
    for (size_t i = 0; i < size; ++i) bytes_[address + i] = 0;
  }

 private:
  std::map<uint64_t, unsigned char> bytes_;
};

}  // namespace slowburn::testing
