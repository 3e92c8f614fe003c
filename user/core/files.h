// Small file helpers that turn failures into Errors naming the path.
#pragma once

#include <filesystem>
#include <string>

#include "core/error.h"

namespace slowburn {

// Whole file as bytes (procfs files report size 0, so read until EOF).
Result<std::string> read_file(const std::filesystem::path& path);

}  // namespace slowburn
