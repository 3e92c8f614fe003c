#include "sysfs/pci_devices.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <sstream>

#include "core/files.h"
#include "core/strings.h"

namespace slowburn {

namespace {

std::optional<std::string> read_trimmed(const std::filesystem::path& path) {
  auto text = read_file(path);
  if (!text) return std::nullopt;
  return std::string(trim_right(*text));
}

// The BDF path components above a device, from its resolved sysfs path:
// /sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0 -> parent 0000:00:01.0.
std::optional<std::string> parent_of(const std::filesystem::path& device_dir) {
  std::error_code ec;
  std::filesystem::path resolved = std::filesystem::weakly_canonical(device_dir, ec);
  if (ec) return std::nullopt;
  std::filesystem::path parent = resolved.parent_path();
  std::string name = parent.filename().string();
  if (is_bdf(name)) return name;
  return std::nullopt;
}

}  // namespace

bool is_bdf(std::string_view name) {
  auto hex = [&](size_t from, size_t count) {
    for (size_t i = from; i < from + count; ++i)
      if (!std::isxdigit(static_cast<unsigned char>(name[i]))) return false;
    return true;
  };
  return name.size() == 12 && hex(0, 4) && name[4] == ':' && hex(5, 2) && name[7] == ':' && hex(8, 2) &&
         name[10] == '.' && name[11] >= '0' && name[11] <= '7';
}

std::optional<uint8_t> pcie_port_type(std::string_view config) {
  auto byte = [&](size_t at) -> std::optional<uint8_t> {
    if (at >= config.size()) return std::nullopt;
    return static_cast<uint8_t>(config[at]);
  };
  auto status = byte(0x06);
  if (!status || !(*status & 0x10)) return std::nullopt;  // no capability list
  auto next = byte(0x34);
  // Bounded walk: a corrupt list must not loop.
  for (int hops = 0; next && *next >= 0x40 && hops < 48; ++hops) {
    size_t at = *next & ~size_t{3};
    auto id = byte(at);
    if (!id) return std::nullopt;
    if (*id == 0x10) {  // PCI Express capability: Device/Port Type in bits 7:4 of its register
      auto reg = byte(at + 2);
      if (!reg) return std::nullopt;
      return static_cast<uint8_t>((*reg >> 4) & 0xf);
    }
    next = byte(at + 1);
  }
  return std::nullopt;
}

std::string normalize_bdf(std::string_view address) {
  std::string bdf(address);
  if (std::count(bdf.begin(), bdf.end(), ':') == 1) bdf = "0000:" + bdf;
  if (bdf.find('.') == std::string::npos) bdf += ".0";
  std::transform(bdf.begin(), bdf.end(), bdf.begin(), [](unsigned char c) { return std::tolower(c); });
  return bdf;
}

std::optional<double> parse_link_speed(std::string_view text) {
  text = trim_right(text);
  if (text.rfind("Unknown", 0) == 0) return 0.0;
  size_t gt = text.find(" GT/s");
  if (gt == std::string_view::npos || gt == 0) return std::nullopt;
  std::string number(text.substr(0, gt));
  char* end = nullptr;
  double value = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size() || value <= 0) return std::nullopt;
  return value;
}

LinkReading read_link_reading(const std::filesystem::path& sysfs_root, const std::string& bdf,
                              std::vector<std::string>* notes) {
  std::filesystem::path dir = sysfs_root / "bus/pci/devices" / bdf;
  LinkReading reading;
  auto note = [&](const std::string& what) {
    if (notes) notes->push_back(what);
  };
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) {
    reading.present = false;
    return reading;
  }
  for (auto [file, slot] : {std::pair{"current_link_speed", &reading.current_speed_gts},
                            std::pair{"max_link_speed", &reading.max_speed_gts}}) {
    auto text = read_trimmed(dir / file);
    if (!text) continue;
    *slot = parse_link_speed(*text);
    if (!*slot) note(fmt::format("{}: '{}' is not a link speed", file, *text));
  }
  for (auto [file, slot] :
       {std::pair{"current_link_width", &reading.current_width}, std::pair{"max_link_width", &reading.max_width}}) {
    auto text = read_trimmed(dir / file);
    if (!text) continue;
    *slot = parse_number<unsigned>(*text, 10);
    if (!*slot) note(fmt::format("{}: '{}' is not a width", file, *text));
  }
  return reading;
}

std::map<std::string, std::string> read_device_files(const std::filesystem::path& sysfs_root, const std::string& bdf,
                                                     const std::vector<std::string>& names) {
  std::map<std::string, std::string> out;
  std::filesystem::path dir = sysfs_root / "bus/pci/devices" / bdf;
  for (const std::string& name : names)
    if (auto text = read_file(dir / name)) out[name] = std::move(*text);
  return out;
}

std::vector<PciDevice> read_pci_devices(const std::filesystem::path& sysfs_root) {
  std::vector<PciDevice> devices;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(sysfs_root / "bus/pci/devices", ec)) {
    std::string name = entry.path().filename().string();
    if (!is_bdf(name)) continue;
    PciDevice dev;
    dev.bdf = name;
    dev.parent_bdf = parent_of(entry.path());
    auto number = [&](const char* file, auto& out, int base) {
      auto text = read_trimmed(entry.path() / file);
      using T = std::remove_reference_t<decltype(out)>;
      auto value = text ? parse_number<T>(*text, base) : std::nullopt;
      if (value)
        out = *value;
      else
        dev.notes.push_back(text ? fmt::format("{}: '{}' is not a number", file, *text)
                                 : fmt::format("{}: missing", file));
    };
    number("vendor", dev.vendor, 16);
    number("device", dev.device, 16);
    number("class", dev.class_code, 16);
    dev.link = read_link_reading(sysfs_root, name, &dev.notes);
    if (auto config = read_file(entry.path() / "config")) dev.port_type = pcie_port_type(*config);
    dev.virtual_function = std::filesystem::exists(entry.path() / "physfn", ec);
    if (auto text = read_trimmed(entry.path() / "numa_node"))
      if (auto node = parse_number<int>(*text, 10); node && *node >= 0) dev.numa_node = *node;
    devices.push_back(std::move(dev));
  }
  std::sort(devices.begin(), devices.end(), [](const PciDevice& a, const PciDevice& b) { return a.bdf < b.bdf; });
  return devices;
}

}  // namespace slowburn
