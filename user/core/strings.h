// String helpers used across layers (one owner each).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace slowburn {

std::string join(const std::vector<std::string>& items, std::string_view separator = ", ");

// Splits on every separator; empty pieces are dropped ("a::b" -> {a, b}).
std::vector<std::string> split(std::string_view text, char separator);

}  // namespace slowburn
