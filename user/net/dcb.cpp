#include "net/dcb.h"

#include <fmt/format.h>
#include <linux/dcbnl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <vector>

#include "core/strings.h"
#include "net/netlink_attrs.h"

namespace slowburn {

std::string pfc_priorities_text(const PfcConfig& config) {
  std::vector<int> priorities;
  for (int p = 0; p < 8; ++p)
    if (config.enabled & (1u << p)) priorities.push_back(p);
  return priorities.empty() ? "none" : join_numbers(priorities);
}

Result<PfcConfig> parse_dcb_ieee_reply(std::span<const std::byte> message, const std::string& ifname) {
  nlmsghdr header;
  if (message.size() < sizeof(header)) return make_error("{}: DCB netlink reply too short", ifname);
  std::memcpy(&header, message.data(), sizeof(header));
  if (header.nlmsg_len < sizeof(header) || header.nlmsg_len > message.size())
    return make_error("{}: DCB netlink reply of a wrong length", ifname);
  message = message.first(header.nlmsg_len);
  if (header.nlmsg_type == NLMSG_ERROR) {
    nlmsgerr err;
    if (message.size() < NLMSG_HDRLEN + sizeof(err)) return make_error("{}: truncated netlink error", ifname);
    std::memcpy(&err, message.data() + NLMSG_HDRLEN, sizeof(err));
    int code = -err.error;
    if (code == EOPNOTSUPP)
      return make_sys_error(code, ifname + ": its driver has no DCB (dcbnl) support, so no PFC configuration");
    return make_sys_error(code, ifname + ": DCB netlink query refused");
  }
  if (header.nlmsg_type != RTM_GETDCB)
    return make_error("{}: unexpected netlink message type {} in reply to RTM_GETDCB", ifname, header.nlmsg_type);
  size_t body = NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(dcbmsg));
  if (message.size() < body) return make_error("{}: DCB netlink reply without its dcbmsg", ifname);
  auto ieee = find_attribute(netlink_attributes(message.subspan(body)), DCB_ATTR_IEEE);
  if (!ieee) return make_error("{}: the driver reports no IEEE 802.1Qaz configuration (no DCB_ATTR_IEEE)", ifname);
  auto pfc = find_attribute(netlink_attributes(*ieee), DCB_ATTR_IEEE_PFC);
  if (!pfc) return make_error("{}: the driver reports no PFC configuration (no DCB_ATTR_IEEE_PFC)", ifname);
  if (pfc->size() < 2) return make_error("{}: DCB_ATTR_IEEE_PFC of {} bytes", ifname, pfc->size());
  PfcConfig config;
  config.capability = static_cast<uint8_t>((*pfc)[offsetof(ieee_pfc, pfc_cap)]);
  config.enabled = static_cast<uint8_t>((*pfc)[offsetof(ieee_pfc, pfc_en)]);
  return config;
}

Result<PfcConfig> read_pfc_config(const std::string& ifname) {
  int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd < 0) return make_sys_error(errno, "cannot open a netlink socket for " + ifname + "'s DCB configuration");
  struct Request {
    nlmsghdr header;
    dcbmsg dcb;
    nlattr name_attr;
    char name[IFNAMSIZ];
  } request{};
  size_t name_len = std::min(ifname.size(), sizeof(request.name) - 1);
  std::memcpy(request.name, ifname.data(), name_len);
  request.name_attr.nla_type = DCB_ATTR_IFNAME;
  request.name_attr.nla_len = static_cast<uint16_t>(NLA_HDRLEN + name_len + 1);
  request.header.nlmsg_len = static_cast<uint32_t>(offsetof(Request, name) + NLA_ALIGN(name_len + 1));
  request.header.nlmsg_type = RTM_GETDCB;
  request.header.nlmsg_flags = NLM_F_REQUEST;
  request.header.nlmsg_seq = 1;
  request.dcb.dcb_family = AF_UNSPEC;
  request.dcb.cmd = DCB_CMD_IEEE_GET;
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  Result<PfcConfig> out = make_error("{}: no reply to the DCB netlink query", ifname);
  if (sendto(fd, &request, request.header.nlmsg_len, 0, reinterpret_cast<sockaddr*>(&kernel), sizeof(kernel)) < 0) {
    out = make_sys_error(errno, "cannot send the DCB netlink query for " + ifname);
  } else {
    std::vector<std::byte> reply(16384);
    timeval timeout{2, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    ssize_t n = recv(fd, reply.data(), reply.size(), 0);
    if (n < 0)
      out = make_sys_error(errno, "no reply to the DCB netlink query for " + ifname);
    else
      out = parse_dcb_ieee_reply(std::span(reply.data(), static_cast<size_t>(n)), ifname);
  }
  close(fd);
  return out;
}

}  // namespace slowburn
