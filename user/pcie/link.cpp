#include "pcie/link.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <utility>

#include "core/strings.h"

namespace slowburn {

Result<ExpectationRule> parse_expectation_rule(std::string_view text) {
  size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0 || eq + 1 == text.size())
    return make_error("expectation '{}' is not SELECTOR=xWIDTH@SPEED (e.g. 10de:*=x16@32)", text);
  ExpectationRule rule;
  rule.selector = std::string(text.substr(0, eq));
  std::string_view rhs = text.substr(eq + 1);
  size_t at = rhs.find('@');
  std::string_view width = rhs.substr(0, at);
  if (!width.empty()) {
    if (width.front() == 'x') width.remove_prefix(1);
    unsigned w = 0;
    auto [end, ec] = std::from_chars(width.data(), width.data() + width.size(), w);
    if (ec != std::errc() || end != width.data() + width.size() || w == 0)
      return make_error("expectation '{}': width '{}' is not xN", text, rhs.substr(0, at));
    rule.expectation.width = w;
  }
  if (at != std::string_view::npos) {
    std::string speed(rhs.substr(at + 1));
    if (speed.size() > 4 && speed.substr(speed.size() - 4) == "GT/s") speed.resize(speed.size() - 4);
    char* end = nullptr;
    double gts = std::strtod(speed.c_str(), &end);
    if (speed.empty() || end != speed.c_str() + speed.size() || gts <= 0)
      return make_error("expectation '{}': speed '{}' is not a number of GT/s", text, rhs.substr(at + 1));
    rule.expectation.speed_gts = gts;
  }
  if (!rule.expectation.width && !rule.expectation.speed_gts)
    return make_error("expectation '{}' sets neither a width nor a speed", text);
  return rule;
}

std::optional<LinkExpectation> find_expectation(const std::vector<ExpectationRule>& rules, std::string_view bdf,
                                                uint16_t vendor, uint16_t device) {
  std::string by_id = fmt::format("{:04x}:{:04x}", vendor, device);
  std::string by_vendor = fmt::format("{:04x}:*", vendor);
  for (const std::string& selector : {std::string(bdf), by_id, by_vendor})
    for (const ExpectationRule& rule : rules)
      if (rule.selector == selector) return rule.expectation;
  return std::nullopt;
}

std::string format_link(std::optional<unsigned> width, std::optional<double> speed_gts) {
  if (!width && !speed_gts) return "-";
  return fmt::format("x{} {} GT/s", width ? std::to_string(*width) : "?",
                     speed_gts ? fmt::format("{:g}", *speed_gts) : "?");
}

std::string_view link_status_name(LinkStatus status) {
  switch (status) {
    case LinkStatus::ok:
      return "ok";
    case LinkStatus::downtrained:
      return "downtrained";
    case LinkStatus::down:
      return "down";
    case LinkStatus::unknown:
      return "unknown";
  }
  return "?";
}

std::pair<LinkStatus, std::string> LinkMonitor::evaluate(const LinkReading& r, const LinkExpectation& expected) {
  if (!r.present) return {LinkStatus::down, "device gone from sysfs (hot-unplugged, removed, or its slot powered off)"};
  if (!r.current_speed_gts && !r.current_width) return {LinkStatus::unknown, "no link attributes"};
  if ((r.current_speed_gts && *r.current_speed_gts == 0) || (r.current_width && *r.current_width == 0))
    return {LinkStatus::down, "link down (speed Unknown or width 0)"};
  std::vector<std::string> below;
  if (expected.width && r.current_width && *r.current_width < *expected.width)
    below.push_back(fmt::format("width x{} < x{}", *r.current_width, *expected.width));
  if (expected.speed_gts && r.current_speed_gts && *r.current_speed_gts < *expected.speed_gts)
    below.push_back(fmt::format("speed {:g} GT/s < {:g} GT/s", *r.current_speed_gts, *expected.speed_gts));
  if (below.empty()) return {LinkStatus::ok, ""};
  std::string reason = below[0];
  for (size_t i = 1; i < below.size(); ++i) reason += ", " + below[i];
  return {LinkStatus::downtrained, reason};
}

std::vector<LinkEvent> LinkMonitor::observe(const std::string& bdf, uint16_t vendor, uint16_t device,
                                            const LinkReading& reading,
                                            const std::optional<LinkExpectation>& partner_max) {
  auto [it, first] = devices_.try_emplace(bdf);
  Tracked& tracked = it->second;
  if (first) {
    if (auto rule = find_expectation(rules_, bdf, vendor, device)) {
      tracked.expected = *rule;
    } else {
      // What the device can do, and where it can't be read, what it did
      // when first seen (a baseline: only later drops are news).
      tracked.expected.width = reading.max_width ? reading.max_width : reading.current_width;
      tracked.expected.speed_gts = reading.max_speed_gts ? reading.max_speed_gts : reading.current_speed_gts;
      if (tracked.expected.width == 0u) tracked.expected.width.reset();
      if (tracked.expected.speed_gts == 0.0) tracked.expected.speed_gts.reset();
      if (partner_max && tracked.expected.width && partner_max->width && *partner_max->width > 0)
        tracked.expected.width = std::min(*tracked.expected.width, *partner_max->width);
      if (partner_max && tracked.expected.speed_gts && partner_max->speed_gts && *partner_max->speed_gts > 0)
        tracked.expected.speed_gts = std::min(*tracked.expected.speed_gts, *partner_max->speed_gts);
    }
  }
  auto [status, reason] = evaluate(reading, tracked.expected);
  std::vector<LinkEvent> events;
  LinkStatus before = tracked.status;
  // A reading that says nothing (files gone for a moment) keeps the state.
  if (status == LinkStatus::unknown || status == before) return events;
  // Down on first sight only for a device that can have a link at all: SR-IOV
  // virtual functions and root-complex integrated endpoints read "Unknown"/0
  // forever.
  if (status == LinkStatus::down && before == LinkStatus::unknown && !tracked.expected.width &&
      !tracked.expected.speed_gts)
    return events;
  tracked.status = status;
  bool was_gone = std::exchange(tracked.gone, !reading.present);
  LinkEvent event{"", bdf, reading, tracked.expected, reason, ""};
  if (status == LinkStatus::down)
    event.type = "link.down";
  else if (status == LinkStatus::downtrained)
    event.type = "link.downtrained";
  else if (before == LinkStatus::down || before == LinkStatus::downtrained) {
    event.type = "link.recovered";
    event.reason = was_gone ? std::string("back in sysfs (replugged or rescanned), link at expectation")
                            : fmt::format("back to expectation after {}", link_status_name(before));
  } else {
    return events;  // unknown -> ok: the first healthy reading is no news
  }
  events.push_back(std::move(event));
  return events;
}

LinkStatus LinkMonitor::status(const std::string& bdf) const {
  auto it = devices_.find(bdf);
  return it == devices_.end() ? LinkStatus::unknown : it->second.status;
}

LinkExpectation LinkMonitor::expectation(const std::string& bdf) const {
  auto it = devices_.find(bdf);
  return it == devices_.end() ? LinkExpectation{} : it->second.expected;
}

std::optional<double> pci_bus_speed_gts(unsigned value) {
  switch (value) {
    case 0x14:
      return 2.5;
    case 0x15:
      return 5.0;
    case 0x16:
      return 8.0;
    case 0x17:
      return 16.0;
    case 0x18:
      return 32.0;
    case 0x19:
      return 64.0;
    case 0xff:
      return 0.0;
    default:
      return std::nullopt;
  }
}

std::string_view pcie_link_reason_name(unsigned reason) {
  static constexpr std::string_view kNames[] = {"RETRAIN", "ADD_BUS", "BWCTRL_ENABLE", "BWCTRL_IRQ", "HOTPLUG"};
  return reason < std::size(kNames) ? kNames[reason] : "UNKNOWN";
}

Result<PcieLinkTrace> decode_pcie_link_record(const TracepointFormat& format, std::span<const std::byte> record) {
  RecordView view(format, record);
  auto port = view.string("port_name");
  auto width = view.unsigned_value("width");
  if (!port || !width) return make_error("pci:pcie_link_event record without port_name or width: format mismatch");
  PcieLinkTrace t;
  t.port = *port;
  t.type = static_cast<unsigned>(view.unsigned_value("type").value_or(0));
  t.reason = static_cast<unsigned>(view.unsigned_value("reason").value_or(0));
  t.current_speed_gts = pci_bus_speed_gts(static_cast<unsigned>(view.unsigned_value("cur_bus_speed").value_or(0xff)));
  t.max_speed_gts = pci_bus_speed_gts(static_cast<unsigned>(view.unsigned_value("max_bus_speed").value_or(0xff)));
  t.width = static_cast<unsigned>(*width);
  t.flit_mode = static_cast<unsigned>(view.unsigned_value("flit_mode").value_or(0));
  t.link_status = static_cast<uint32_t>(view.unsigned_value("link_status").value_or(0));
  // LNKSTA bits (include/uapi/linux/pci_regs.h).
  static constexpr std::pair<uint32_t, const char*> kBits[] = {
      {0x0800, "LT"}, {0x2000, "DLLLA"}, {0x4000, "LBMS"}, {0x8000, "LABS"}};
  for (auto [mask, name] : kBits)
    if (t.link_status & mask) t.status_bits.push_back(name);
  return t;
}

std::string_view pci_hp_event_name(int event) {
  static constexpr std::string_view kNames[] = {"LINK_UP", "LINK_DOWN", "CARD_PRESENT", "CARD_NOT_PRESENT"};
  return event >= 0 && event < 4 ? kNames[event] : "UNKNOWN";
}

Result<PciHotplugTrace> decode_pci_hp_record(const TracepointFormat& format, std::span<const std::byte> record) {
  RecordView view(format, record);
  auto port = view.string("port_name");
  auto event = view.signed_value("event");
  if (!port || !event) return make_error("pci:pci_hp_event record without port_name or event: format mismatch");
  return PciHotplugTrace{*port, view.string("slot").value_or(""), static_cast<int>(*event)};
}

}  // namespace slowburn
