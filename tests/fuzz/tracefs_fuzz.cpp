// libFuzzer target for tracefs `format` files (tracefs/format.h) and the
// raw records decoded through them (ras:aer_event, pci:pcie_link_event,
// pci:pci_hp_event, nvidia:nvidia_dev_xid). The input is a format file, a
// NUL byte, then one raw record: any format, any record, no crash, no hang,
// no out-of-bounds read (ASan and UBSan, `make fuzz`); a parsed format has
// fields, and every field reads through RecordView without leaving the
// record.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <sstream>
#include <string>

#include "nvidia/xid_record.h"
#include "pcie/aer.h"
#include "pcie/link.h"
#include "tracefs/format.h"

using namespace slowburn;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto* nul = static_cast<const uint8_t*>(std::memchr(data, 0, size));
  size_t text_size = nul ? static_cast<size_t>(nul - data) : size;
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), text_size));
  auto format = parse_format(in);
  if (!format) return 0;
  if (format->fields.empty()) std::abort();
  // The record: what follows the NUL, in a buffer of its own so that ASan
  // sees a read past its end.
  size_t record_at = nul ? text_size + 1 : size;
  std::vector<std::byte> record(size - record_at);
  if (!record.empty()) std::memcpy(record.data(), data + record_at, record.size());
  std::span<const std::byte> bytes(record);
  RecordView view(*format, bytes);
  for (const FormatField& field : format->fields) {
    (void)view.unsigned_value(field.name);
    (void)view.signed_value(field.name);
    if (auto text = view.string(field.name); text && text->size() > bytes.size()) std::abort();
    if (auto words = view.u32_array(field.name); words && words->size() * 4 > bytes.size()) std::abort();
  }
  (void)decode_aer_record(*format, bytes);
  (void)decode_pcie_link_record(*format, bytes);
  (void)decode_pci_hp_record(*format, bytes);
  (void)decode_xid_record(*format, bytes);
  return 0;
}
