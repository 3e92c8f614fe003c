#include "stats/cusum.h"

#include <algorithm>

namespace slowburn {

bool Cusum::add(double x) {
  sum_ = std::max(0.0, sum_ + x - allowance_);
  return alarmed();
}

}  // namespace slowburn
