// Small file helpers that turn failures into Errors naming the path.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"

namespace slowburn {

// Whole file as bytes (procfs files report size 0, so read until EOF).
Result<std::string> read_file(const std::filesystem::path& path);

// The names in a directory, sorted; none when it is absent or unreadable.
std::vector<std::string> sorted_dir_entries(const std::filesystem::path& dir);

}  // namespace slowburn
