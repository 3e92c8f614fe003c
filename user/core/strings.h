// String helpers used across layers (one owner each).
#pragma once

#include <charconv>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace slowburn {

std::string join(const std::vector<std::string>& items, std::string_view separator = ", ");
// "2,3,5": numbers as a recording stores a list.
std::string join_numbers(const std::vector<int>& values, std::string_view separator = ",");

// Splits on every separator; empty pieces are dropped ("a::b" -> {a, b}).
std::vector<std::string> split(std::string_view text, char separator);

// The whole text as a number ("0x" allowed in base 16); nullopt for empty
// text, trailing characters or overflow.
template <typename T>
std::optional<T> parse_number(std::string_view text, int base = 10) {
  if (base == 16 && text.rfind("0x", 0) == 0) text.remove_prefix(2);
  T value{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// The candidate nearest to `word` by edit distance, when it is within
// max(2, word's length / 3) edits ("tracee" -> "trace"); nullopt otherwise.
std::optional<std::string> closest_match(std::string_view word, const std::vector<std::string>& candidates);

// Without trailing newlines and spaces (sysfs and procfs values end in "\n").
std::string_view trim_right(std::string_view text);
// Without white space at either end.
std::string_view trim(std::string_view text);

}  // namespace slowburn
