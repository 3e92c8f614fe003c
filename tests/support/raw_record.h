// Builds raw tracepoint records from a format, as the kernel lays them out,
// so decoders are tested on every layout without the hardware.
#pragma once

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "tracefs/format.h"

namespace slowburn::testing {

inline TracepointFormat load_format(const std::string& fixture) {
  std::ifstream in(std::string(SLOWBURN_SOURCE_DIR) + "/tests/fixtures/tracefs/" + fixture);
  auto format = parse_format(in);
  if (!format) throw std::runtime_error(fixture + ": " + format.error().message);
  return *format;
}

class RawRecord {
 public:
  RawRecord(const TracepointFormat& format, size_t size) : format_(format), bytes_(size) {
    // Dynamic data goes after the last fixed field.
    for (const FormatField& f : format.fields) dynamic_end_ = std::max<size_t>(dynamic_end_, f.offset + f.size);
  }
  void set(const std::string& field, uint64_t value) {
    const FormatField* f = must(field);
    std::memcpy(bytes_.data() + f->offset, &value, f->size);
  }
  void set_u32_array(const std::string& field, const std::vector<uint32_t>& values) {
    const FormatField* f = must(field);
    std::memcpy(bytes_.data() + f->offset, values.data(), std::min<size_t>(f->size, values.size() * 4));
  }
  void set_string(const std::string& field, const std::string& text) {
    const FormatField* f = must(field);
    uint32_t length = static_cast<uint32_t>(text.size() + 1);
    uint32_t loc = (length << 16) | static_cast<uint32_t>(dynamic_end_);
    std::memcpy(bytes_.data() + f->offset, &loc, 4);
    std::memcpy(bytes_.data() + dynamic_end_, text.c_str(), length);
    dynamic_end_ += length;
  }
  const std::vector<std::byte>& bytes() const { return bytes_; }

 private:
  const FormatField* must(const std::string& field) {
    const FormatField* f = format_.field(field);
    if (!f) throw std::runtime_error("no field " + field);
    return f;
  }
  const TracepointFormat& format_;
  std::vector<std::byte> bytes_;
  size_t dynamic_end_ = 0;
};

}  // namespace slowburn::testing
