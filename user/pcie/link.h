// PCIe link state: sysfs speed/width attributes, the expectation a link is
// held to, and the monitor that turns readings into link.downtrained /
// link.recovered / link.down events. Pure: readings in, events out.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "sysfs/pci_devices.h"
#include "tracefs/format.h"

namespace slowburn {

// --expect rules: "SELECTOR=xWIDTH@SPEED" with SELECTOR a BDF
// ("0000:3b:00.0"), a vendor:device ("10de:2330") or a vendor wildcard
// ("10de:*"); "x16@32", "x8", "@16" are all valid right-hand sides.
struct ExpectationRule {
  std::string selector;
  LinkExpectation expectation;
};
Result<ExpectationRule> parse_expectation_rule(std::string_view text);

// The most specific rule for a device: BDF, then vendor:device, then vendor:*.
std::optional<LinkExpectation> find_expectation(const std::vector<ExpectationRule>& rules, std::string_view bdf,
                                                uint16_t vendor, uint16_t device);

// "x16 32 GT/s", "x? 16 GT/s"; "-" when neither is known.
std::string format_link(std::optional<unsigned> width, std::optional<double> speed_gts);

enum class LinkStatus { ok, downtrained, down, unknown };
std::string_view link_status_name(LinkStatus status);

struct LinkEvent {
  std::string type;  // link.downtrained, link.recovered, link.down
  std::string device;
  LinkReading reading;
  LinkExpectation expected;
  std::string reason;   // what is below what, in words
  std::string partner;  // BDF of the other end of the link, when known
};

// Tracks every device's link against its expectation: explicit rule, else
// the most both ends can do (min of this device's max_link_* and its link
// partner's), else the first reading seen (the baseline). Emits an event
// when a device's status changes (and for a link already degraded when
// first seen).
class LinkMonitor {
 public:
  explicit LinkMonitor(std::vector<ExpectationRule> rules = {}) : rules_(std::move(rules)) {}

  // partner_max: the capability of the device at the other end of this link
  // (a switch port trained to an x8 Gen4 NIC is not downtrained).
  std::vector<LinkEvent> observe(const std::string& bdf, uint16_t vendor, uint16_t device, const LinkReading& reading,
                                 const std::optional<LinkExpectation>& partner_max = std::nullopt);
  LinkStatus status(const std::string& bdf) const;
  LinkExpectation expectation(const std::string& bdf) const;
  // The status a reading has against an expectation, and why.
  static std::pair<LinkStatus, std::string> evaluate(const LinkReading& reading, const LinkExpectation& expected);

 private:
  struct Tracked {
    LinkExpectation expected;
    LinkStatus status = LinkStatus::unknown;
    bool gone = false;  // its sysfs directory vanished; back is news
  };
  std::vector<ExpectationRule> rules_;
  std::map<std::string, Tracked> devices_;
};

// pci:pcie_link_event (v7.0+): a link retrained, or bandwidth notification.
struct PcieLinkTrace {
  std::string port;  // the upstream bridge's BDF
  unsigned type = 0;
  unsigned reason = 0;  // 0 RETRAIN, 1 ADD_BUS, 2 BWCTRL_ENABLE, 3 BWCTRL_IRQ, 4 HOTPLUG
  std::optional<double> current_speed_gts;
  std::optional<double> max_speed_gts;
  unsigned width = 0;
  unsigned flit_mode = 0;
  uint32_t link_status = 0;
  std::vector<std::string> status_bits;  // LT, DLLLA, LBMS, LABS
};
Result<PcieLinkTrace> decode_pcie_link_record(const TracepointFormat& format, std::span<const std::byte> record);
std::string_view pcie_link_reason_name(unsigned reason);
// enum pci_bus_speed (PCIE_SPEED_2_5GT = 0x14 ... 64_0GT = 0x19; 0xff unknown)
std::optional<double> pci_bus_speed_gts(unsigned value);

// pci:pci_hp_event: 0 LINK_UP, 1 LINK_DOWN, 2 CARD_PRESENT, 3 CARD_NOT_PRESENT.
struct PciHotplugTrace {
  std::string port;
  std::string slot;
  int event = 0;
};
Result<PciHotplugTrace> decode_pci_hp_record(const TracepointFormat& format, std::span<const std::byte> record);
std::string_view pci_hp_event_name(int event);

}  // namespace slowburn
