#include "tracefs/format.h"

#include <charconv>
#include <cstring>
#include <regex>

namespace slowburn {

namespace {

std::optional<uint32_t> number_after(const std::string& line, const char* key) {
  size_t at = line.find(key);
  if (at == std::string::npos) return std::nullopt;
  const char* begin = line.data() + at + std::strlen(key);
  uint32_t value = 0;
  auto [end, ec] = std::from_chars(begin, line.data() + line.size(), value);
  if (ec != std::errc() || end == begin) return std::nullopt;
  return value;
}

}  // namespace

const FormatField* TracepointFormat::field(std::string_view wanted) const {
  for (const FormatField& f : fields)
    if (f.name == wanted) return &f;
  return nullptr;
}

Result<TracepointFormat> parse_format(std::istream& in) {
  TracepointFormat format;
  std::string line;
  int line_number = 0;
  // field:<declaration>;	offset:N;	size:N;	signed:N;
  static const std::regex kDeclaration(R"(^\s*field:(.+?)\s*;\s*offset:)");
  static const std::regex kNameAndArray(R"(^(.*?)\s*([A-Za-z_][A-Za-z0-9_]*)\s*(\[(\d*)\])?$)");
  while (std::getline(in, line)) {
    ++line_number;
    if (line.rfind("name: ", 0) == 0) {
      format.name = line.substr(6);
      continue;
    }
    if (line.rfind("ID: ", 0) == 0) {
      if (auto id = number_after(line, "ID: ")) format.id = *id;
      continue;
    }
    if (line.find("field:") == std::string::npos) continue;
    std::smatch declaration;
    auto offset = number_after(line, "offset:");
    auto size = number_after(line, "size:");
    if (!std::regex_search(line, declaration, kDeclaration) || !offset || !size)
      return make_error("format line {} is not 'field:TYPE NAME; offset:N; size:N;': {}", line_number, line);
    std::string decl = declaration[1];
    FormatField field;
    field.offset = *offset;
    field.size = *size;
    field.is_signed = number_after(line, "signed:").value_or(0) != 0;
    // "__data_loc char[] msg": the brackets belong to the type.
    for (const char* loc : {"__data_loc ", "__rel_loc "}) {
      if (decl.rfind(loc, 0) != 0) continue;
      field.data_loc = loc[2] == 'd';
      field.rel_loc = !field.data_loc;
      size_t space = decl.rfind(' ');
      field.type = decl.substr(0, space);
      field.name = decl.substr(space + 1);
    }
    if (field.name.empty()) {
      std::smatch parts;
      if (!std::regex_match(decl, parts, kNameAndArray))
        return make_error("format line {}: cannot read a field name in '{}'", line_number, decl);
      field.type = parts[1];
      field.name = parts[2];
      if (parts[3].matched) {
        uint32_t length = 0;
        std::string digits = parts[4];
        std::from_chars(digits.data(), digits.data() + digits.size(), length);
        field.array_length = length;
      }
    }
    format.fields.push_back(std::move(field));
  }
  if (format.fields.empty()) return make_error("no field in the tracepoint format (is it a tracefs format file?)");
  return format;
}

std::optional<uint64_t> RecordView::read_unsigned(uint32_t offset, uint32_t size) const {
  if (size == 0 || size > 8 || static_cast<size_t>(offset) + size > bytes_.size()) return std::nullopt;
  uint64_t value = 0;
  std::memcpy(&value, bytes_.data() + offset, size);  // little-endian hosts, as the kernel wrote it
  return value;
}

std::optional<uint64_t> RecordView::unsigned_value(std::string_view name) const {
  const FormatField* f = format_.field(name);
  if (!f || f->array_length) return std::nullopt;
  return read_unsigned(f->offset, f->size);
}

std::optional<int64_t> RecordView::signed_value(std::string_view name) const {
  const FormatField* f = format_.field(name);
  if (!f || f->array_length) return std::nullopt;
  auto raw = read_unsigned(f->offset, f->size);
  if (!raw) return std::nullopt;
  if (f->size < 8) {
    uint64_t sign = uint64_t{1} << (f->size * 8 - 1);
    if (*raw & sign) return static_cast<int64_t>(*raw | ~((sign << 1) - 1));
  }
  return static_cast<int64_t>(*raw);
}

std::optional<std::string> RecordView::string(std::string_view name) const {
  const FormatField* f = format_.field(name);
  if (!f) return std::nullopt;
  size_t start = 0, length = 0;
  if (f->data_loc || f->rel_loc) {
    auto loc = read_unsigned(f->offset, 4);
    if (!loc) return std::nullopt;
    start = (*loc & 0xffff) + (f->rel_loc ? f->offset + f->size : 0);
    length = *loc >> 16;
  } else {
    start = f->offset;
    length = f->size;
  }
  if (start + length > bytes_.size()) return std::nullopt;
  if (length == 0) return std::string();  // an empty record may have no bytes to point into (fuzz: tracefs)
  const char* text = reinterpret_cast<const char*>(bytes_.data() + start);
  return std::string(text, strnlen(text, length));
}

std::optional<std::vector<uint32_t>> RecordView::u32_array(std::string_view name) const {
  const FormatField* f = format_.field(name);
  if (!f || f->array_length == 0 || f->size != f->array_length * 4) return std::nullopt;
  std::vector<uint32_t> values;
  for (uint32_t i = 0; i < f->array_length; ++i) {
    auto v = read_unsigned(f->offset + i * 4, 4);
    if (!v) return std::nullopt;
    values.push_back(static_cast<uint32_t>(*v));
  }
  return values;
}

}  // namespace slowburn
