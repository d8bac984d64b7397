#pragma once
// One pass over a float32 array that answers what the weight checks ask of every tensor at load:
// how many values are not finite, and the largest finite magnitude. It compares bit patterns
// (|v| as an unsigned integer orders like the float; finite iff below the exponent-all-ones
// pattern), so the loop vectorises, and large arrays are split over the CPU threads; a model
// load scans every weight once (check_params) instead of once per check.
#include <cstdint>

namespace atlas {

struct FloatScan {
  int64_t non_finite = 0;
  float max_abs = 0.0f;  // over finite values; 0 when there are none
};

FloatScan scan_floats(const float* values, int64_t n);

}  // namespace atlas
