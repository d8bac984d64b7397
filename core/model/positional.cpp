#include "core/model/positional.h"

#include <cmath>

namespace atlas {

Tensor sinusoid_table(int64_t length, int64_t d, SinusoidLayout layout, int64_t first) {
  Tensor pe({length, d});
  const int64_t half = d / 2;
  for (int64_t p = 0; p < length; ++p) {
    float* row = pe.data.data() + p * d;
    const double pos = static_cast<double>(first + p);
    for (int64_t i = 0; i < half; ++i) {
      // Computed in double: float angles lose digits at long positions.
      const double angle = pos * std::pow(10000.0, -2.0 * static_cast<double>(i) / d);
      const float s = static_cast<float>(std::sin(angle)), c = static_cast<float>(std::cos(angle));
      if (layout == SinusoidLayout::Interleaved) {
        row[2 * i] = s;
        row[2 * i + 1] = c;
      } else {
        row[i] = s;
        row[half + i] = c;
      }
    }
  }
  return pe;
}

}  // namespace atlas
