// The Prometheus text exposition format (0.0.4), written family by family:
// HELP and TYPE once, then the samples, label values escaped. Pure: the
// probe service decides what to export, this decides how it is spelled.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace slowburn {

using MetricLabels = std::vector<std::pair<std::string, std::string>>;

struct HistogramBucket {
  double le = 0;  // upper bound, in the metric's base unit
  uint64_t cumulative = 0;
};

class MetricsText {
 public:
  // type: counter, gauge, histogram. A family declared twice is an error in
  // the format: the second declaration is ignored, its samples join the first.
  void family(std::string_view name, std::string_view type, std::string_view help);
  void sample(std::string_view name, const MetricLabels& labels, double value);
  // name_bucket{le=...} for each bucket and +Inf, name_sum, name_count.
  void histogram(std::string_view name, const MetricLabels& labels, std::span<const HistogramBucket> buckets,
                 double sum, uint64_t count);
  const std::string& text() const { return out_; }

 private:
  std::string out_;
  std::vector<std::string> declared_;
};

// "a\"b" for a"b: backslash, double quote and newline escaped.
std::string escape_label_value(std::string_view value);
// A sample value as Prometheus spells it (integers without exponent, NaN, +Inf).
std::string format_metric_value(double value);

}  // namespace slowburn
