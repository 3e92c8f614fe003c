#include "sinks/metrics_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace slowburn {

std::string escape_label_value(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string format_metric_value(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (value == std::floor(value) && std::fabs(value) < 1e15) return fmt::format("{}", static_cast<int64_t>(value));
  return fmt::format("{}", value);
}

namespace {
void append_labels(std::string& out, const MetricLabels& labels, std::string_view extra_name = {},
                   std::string_view extra_value = {}) {
  if (labels.empty() && extra_name.empty()) return;
  out += '{';
  bool first = true;
  for (const auto& [name, value] : labels) {
    if (!first) out += ',';
    first = false;
    out += fmt::format("{}=\"{}\"", name, escape_label_value(value));
  }
  if (!extra_name.empty()) {
    if (!first) out += ',';
    out += fmt::format("{}=\"{}\"", extra_name, extra_value);
  }
  out += '}';
}

// HELP text escapes backslash and newline only.
std::string escape_help(std::string_view help) {
  std::string out;
  for (char c : help) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}
}  // namespace

void MetricsText::family(std::string_view name, std::string_view type, std::string_view help) {
  if (std::find(declared_.begin(), declared_.end(), name) != declared_.end()) return;
  declared_.emplace_back(name);
  out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, escape_help(help), name, type);
}

void MetricsText::sample(std::string_view name, const MetricLabels& labels, double value) {
  out_ += name;
  append_labels(out_, labels);
  out_ += ' ';
  out_ += format_metric_value(value);
  out_ += '\n';
}

void MetricsText::histogram(std::string_view name, const MetricLabels& labels, std::span<const HistogramBucket> buckets,
                            double sum, uint64_t count) {
  std::string bucket_name = fmt::format("{}_bucket", name);
  for (const HistogramBucket& b : buckets) {
    out_ += bucket_name;
    append_labels(out_, labels, "le", format_metric_value(b.le));
    out_ += fmt::format(" {}\n", b.cumulative);
  }
  out_ += bucket_name;
  append_labels(out_, labels, "le", "+Inf");
  out_ += fmt::format(" {}\n", count);
  sample(fmt::format("{}_sum", name), labels, sum);
  sample(fmt::format("{}_count", name), labels, static_cast<double>(count));
}

}  // namespace slowburn
