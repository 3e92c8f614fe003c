// A tracepoint's record layout, read from its tracefs `format` file at run
// time: the layout of ras:aer_event (and others) differs between kernels,
// so nothing about it is compiled in. Parsers take a std::istream, so a
// literal format file is a unit test.
#pragma once

#include <cstdint>
#include <istream>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace slowburn {

struct FormatField {
  std::string type;  // "u32", "__data_loc char[]", "unsigned int"
  std::string name;  // "status", "tlp_header"
  uint32_t offset = 0;
  uint32_t size = 0;
  bool is_signed = false;
  uint32_t array_length = 0;  // "u32 tlp_header[14]" -> 14; 0 when not an array
  bool data_loc = false;      // __data_loc: u32 holding (length << 16 | offset from record start)
  bool rel_loc = false;       // __rel_loc: the same, offset from the end of the field
};

struct TracepointFormat {
  std::string name;
  uint32_t id = 0;
  std::vector<FormatField> fields;  // common_* fields included

  const FormatField* field(std::string_view name) const;
};

// Parses a tracefs `format` file. Malformed field lines are an error naming
// the line; unknown lines (print fmt, blank) are skipped.
Result<TracepointFormat> parse_format(std::istream& in);

// Typed reads of one raw record through its format. Bytes past the record's
// end, or a field the format lacks, read as nullopt: never out of bounds.
class RecordView {
 public:
  RecordView(const TracepointFormat& format, std::span<const std::byte> bytes) : format_(format), bytes_(bytes) {}

  bool has(std::string_view field) const { return format_.field(field) != nullptr; }
  std::optional<uint64_t> unsigned_value(std::string_view field) const;
  std::optional<int64_t> signed_value(std::string_view field) const;
  // __data_loc / __rel_loc strings, and fixed char arrays.
  std::optional<std::string> string(std::string_view field) const;
  // Arrays of u32 (e.g. tlp_header): every element.
  std::optional<std::vector<uint32_t>> u32_array(std::string_view field) const;

 private:
  std::optional<uint64_t> read_unsigned(uint32_t offset, uint32_t size) const;
  const TracepointFormat& format_;
  std::span<const std::byte> bytes_;
};

}  // namespace slowburn
