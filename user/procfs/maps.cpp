#include "procfs/maps.h"

#include <sstream>

namespace slowburn {

std::vector<MapEntry> parse_maps(std::istream& in) {
  std::vector<MapEntry> maps;
  std::string line;
  while (std::getline(in, line)) {
    // 7f1c...-7f1c... r-xp 00022000 fe:01 1234   /usr/lib/x86_64-linux-gnu/libmpi.so.40.30.4
    std::istringstream fields(line);
    std::string range, perms, offset, dev, inode;
    if (!(fields >> range >> perms >> offset >> dev >> inode)) continue;
    MapEntry entry;
    try {
      size_t dash = range.find('-');
      size_t colon = dev.find(':');
      if (dash == std::string::npos || colon == std::string::npos) continue;
      entry.start = std::stoull(range.substr(0, dash), nullptr, 16);
      entry.end = std::stoull(range.substr(dash + 1), nullptr, 16);
      entry.offset = std::stoull(offset, nullptr, 16);
      entry.dev_major = std::stoull(dev.substr(0, colon), nullptr, 16);
      entry.dev_minor = std::stoull(dev.substr(colon + 1), nullptr, 16);
      entry.inode = std::stoull(inode);
    } catch (const std::exception&) {
      continue;
    }
    entry.perms = perms;
    std::string rest;
    std::getline(fields, rest);
    size_t first = rest.find_first_not_of(' ');
    if (first != std::string::npos) entry.path = rest.substr(first);
    constexpr std::string_view kDeleted = " (deleted)";
    if (entry.path.size() > kDeleted.size() &&
        entry.path.compare(entry.path.size() - kDeleted.size(), kDeleted.size(), kDeleted) == 0) {
      entry.path.resize(entry.path.size() - kDeleted.size());
      entry.deleted = true;
    }
    maps.push_back(std::move(entry));
  }
  return maps;
}

bool library_name_matches(std::string_view path, std::string_view soname_stem) {
  size_t slash = path.rfind('/');
  std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  if (base.substr(0, soname_stem.size()) != soname_stem) return false;
  return base.size() == soname_stem.size() || base[soname_stem.size()] == '.';
}

std::optional<MapEntry> mapping_at(const std::vector<MapEntry>& maps, uint64_t address) {
  for (const MapEntry& entry : maps)
    if (address >= entry.start && address < entry.end) return entry;
  return std::nullopt;
}

std::optional<MapEntry> find_library(const std::vector<MapEntry>& maps, std::string_view soname_stem) {
  for (const MapEntry& entry : maps) {
    if (entry.inode != 0 && !entry.path.empty() && entry.path.front() == '/' &&
        library_name_matches(entry.path, soname_stem))
      return entry;
  }
  return std::nullopt;
}

}  // namespace slowburn
