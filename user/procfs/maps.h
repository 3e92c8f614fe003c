// /proc/PID/maps: which files a process has mapped, so probes attach to the
// library the job actually loaded (its own path, inode and namespace).
#pragma once

#include <cstdint>
#include <istream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace slowburn {

struct MapEntry {
  uint64_t start = 0;
  uint64_t end = 0;
  std::string perms;  // "r-xp"
  uint64_t offset = 0;
  uint64_t dev_major = 0;
  uint64_t dev_minor = 0;
  uint64_t inode = 0;
  std::string path;      // empty for anonymous mappings
  bool deleted = false;  // the file was replaced or removed after mapping
};

// Malformed lines are skipped; a maps file is written by the kernel, so a
// bad line means a format we do not know, not an input error to stop on.
std::vector<MapEntry> parse_maps(std::istream& in);

// True when a mapped file's name is the library `soname_stem` names:
// "libmpi.so" matches libmpi.so, libmpi.so.40, libmpi.so.40.30.4, not
// libmpi_cxx.so.
bool library_name_matches(std::string_view path, std::string_view soname_stem);

// The mapping holding `address`, if any.
std::optional<MapEntry> mapping_at(const std::vector<MapEntry>& maps, uint64_t address);

// The first file-backed mapping of that library, if any.
std::optional<MapEntry> find_library(const std::vector<MapEntry>& maps, std::string_view soname_stem);

}  // namespace slowburn
