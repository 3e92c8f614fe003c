// log2 histograms in the libbpf-tools layout (print_log2_hist), so output
// reads like funclatency's and biolatency's.
#pragma once

#include <string>

#include "stats/log2_hist.h"

namespace slowburn {

std::string format_log2_hist(const Log2Histogram& hist);

}  // namespace slowburn
