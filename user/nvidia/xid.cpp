#include "nvidia/xid.h"

#include <cctype>
#include <charconv>

namespace slowburn {

namespace {

constexpr std::string_view kXidPrefix = "NVRM: Xid (";
constexpr std::string_view kSwitchPrefix = "nvidia-nvswitch";
constexpr std::string_view kSxidMarker = ": SXid (";

std::optional<int> parse_int(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end == text.data()) return std::nullopt;
  return value;
}

// Strips a leading "[  123.456789] " (a console copy of the line).
std::string_view without_timestamp(std::string_view line) {
  if (!line.empty() && line.front() == '[') {
    size_t close = line.find("] ");
    if (close != std::string_view::npos && close < 24) line.remove_prefix(close + 2);
  }
  return line;
}

// "PCI:0000:01:00 GPU-I:05 GPU-CI:01" or "0000:03:00"
void parse_location(std::string_view inside, XidEvent& event) {
  size_t pos = 0;
  bool first = true;
  while (pos < inside.size()) {
    size_t end = inside.find(' ', pos);
    std::string_view token = inside.substr(pos, end == std::string_view::npos ? end : end - pos);
    pos = end == std::string_view::npos ? inside.size() : end + 1;
    if (token.empty()) continue;
    if (token.rfind("GPU-CI:", 0) == 0) {
      event.compute_instance = parse_int(token.substr(7));
    } else if (token.rfind("GPU-I:", 0) == 0) {
      event.gpu_instance = parse_int(token.substr(6));
    } else if (first) {
      event.pci = std::string(token.rfind("PCI:", 0) == 0 ? token.substr(4) : token);
      first = false;
    }
  }
}

std::optional<std::string> value_or_unknown(std::string_view value) {
  while (!value.empty() && (value.front() == '\'' || value.front() == ' ')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == '\'' || value.back() == ' ')) value.remove_suffix(1);
  if (value.empty() || value == "<unknown>") return std::nullopt;
  return std::string(value);
}

// Takes "key=value, " off the front of rest when present.
std::optional<std::string_view> take_field(std::string_view& rest, std::string_view key) {
  if (rest.rfind(key, 0) != 0) return std::nullopt;
  size_t comma = rest.find(", ", key.size());
  std::string_view value = rest.substr(key.size(), comma == std::string_view::npos ? comma : comma - key.size());
  rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 2);
  return value;
}

// On a line whose timestamp (if any) is already gone.
bool starts_like_xid(std::string_view line) {
  if (line.rfind(kXidPrefix, 0) == 0) return true;
  if (line.rfind(kSwitchPrefix, 0) != 0) return false;
  size_t marker = line.find(kSxidMarker, kSwitchPrefix.size());
  return marker != std::string_view::npos && marker <= kSwitchPrefix.size() + 3;
}

}  // namespace

bool looks_like_xid_line(std::string_view line) { return starts_like_xid(without_timestamp(line)); }

std::optional<XidEvent> parse_xid_line(std::string_view line) {
  line = without_timestamp(line);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  if (!starts_like_xid(line)) return std::nullopt;
  XidEvent event;
  size_t open;
  if (line.rfind(kXidPrefix, 0) == 0) {
    open = kXidPrefix.size() - 1;
  } else {
    event.nvswitch = true;
    size_t marker = line.find(kSxidMarker);
    event.switch_index = parse_int(line.substr(kSwitchPrefix.size(), marker - kSwitchPrefix.size()));
    open = marker + kSxidMarker.size() - 1;
  }
  size_t close = line.find("): ", open);
  if (close == std::string_view::npos) return std::nullopt;
  parse_location(line.substr(open + 1, close - open - 1), event);
  std::string_view rest = line.substr(close + 3);

  // The code: "79, ..." (SXid: zero-padded "00012, ...").
  size_t comma = rest.find(',');
  auto code = parse_int(rest.substr(0, comma));
  if (!code || *code < 0) return std::nullopt;
  event.code = *code;
  rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  parse_xid_message(rest, event);
  return event;
}

void parse_xid_message(std::string_view rest, XidEvent& event) {
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  if (auto pid = take_field(rest, "pid=")) {
    if (auto text = value_or_unknown(*pid)) event.pid = parse_int(*text);
  }
  if (auto name = take_field(rest, "name=")) event.process = value_or_unknown(*name);
  event.message = std::string(rest);

  constexpr std::string_view kCausedBy = "caused by previous Xid ";
  size_t caused = event.message.rfind(kCausedBy);
  if (caused != std::string::npos)
    event.caused_by = parse_int(std::string_view(event.message).substr(caused + kCausedBy.size()));
}

}  // namespace slowburn
