// The attributes of a netlink message (struct nlattr, 4-byte aligned), as
// rtnetlink's DCB replies and sock_diag's carry them. Pure.
#pragma once

#include <linux/netlink.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <vector>

namespace slowburn {

struct NetlinkAttribute {
  uint16_t type = 0;
  std::span<const std::byte> payload;
};

// The attributes packed in `bytes`; stops at the first one that does not fit.
inline std::vector<NetlinkAttribute> netlink_attributes(std::span<const std::byte> bytes) {
  std::vector<NetlinkAttribute> out;
  size_t at = 0;
  while (at + NLA_HDRLEN <= bytes.size()) {
    nlattr header;
    std::memcpy(&header, bytes.data() + at, sizeof(header));
    if (header.nla_len < NLA_HDRLEN || at + header.nla_len > bytes.size()) break;
    out.push_back({static_cast<uint16_t>(header.nla_type & NLA_TYPE_MASK),
                   bytes.subspan(at + NLA_HDRLEN, header.nla_len - NLA_HDRLEN)});
    at += NLA_ALIGN(header.nla_len);
  }
  return out;
}

inline std::optional<std::span<const std::byte>> find_attribute(const std::vector<NetlinkAttribute>& attrs,
                                                                uint16_t type) {
  for (const NetlinkAttribute& a : attrs)
    if (a.type == type) return a.payload;
  return std::nullopt;
}

}  // namespace slowburn
