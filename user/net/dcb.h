// A network interface's IEEE 802.1Qaz PFC configuration through DCB
// netlink (rtnetlink RTM_GETDCB, DCB_CMD_IEEE_GET; what `dcb pfc show` and
// `mlnx_qos` read): which priorities are lossless. Reading needs no
// privilege (only RTM_SETDCB needs CAP_NET_ADMIN). In the calling thread's
// network namespace.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "core/error.h"

namespace slowburn {

struct PfcConfig {
  uint8_t capability = 0;  // pfc_cap: how many traffic classes may be PFC-enabled
  uint8_t enabled = 0;     // pfc_en: bit N = priority N is lossless
};

// "3" or "3,4" or "none": the enabled priorities.
std::string pfc_priorities_text(const PfcConfig& config);

// Pure: the kernel's reply (one netlink message: nlmsghdr, dcbmsg,
// attributes) to DCB_CMD_IEEE_GET. An NLMSG_ERROR reply is an error naming
// the errno (EOPNOTSUPP: the driver has no DCB support); a reply without
// DCB_ATTR_IEEE_PFC says the driver reports no PFC.
Result<PfcConfig> parse_dcb_ieee_reply(std::span<const std::byte> message, const std::string& ifname);

// Asks the kernel.
Result<PfcConfig> read_pfc_config(const std::string& ifname);

}  // namespace slowburn
