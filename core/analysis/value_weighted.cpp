// Value norms of a traced map (value_weighted.h).
#include "core/analysis/value_weighted.h"

#include "core/tensor/error.h"

namespace atlas {

std::vector<float> value_norms(const Trace& trace, const AttentionMap& map, int64_t head) {
  const TracedArray* norms = trace.find(map.companions.value_norms);
  if (!norms)
    throw AtlasError("value-weighted attention needs the value norms of " + map.array +
                     ": run with value norms traced (atlas run --value-norms; the app's "
                     "Value-weighted option)");
  const Tensor& n = norms->tensor;
  if (n.shape.size() != 2 || n.shape[1] != map.keys.count)
    throw AtlasError(map.companions.value_norms + " is not [heads, " + std::to_string(map.keys.count) + "]");
  if (head < 0 || head >= n.shape[0])
    throw AtlasError("head " + std::to_string(head) + " does not exist; " + map.array + " has " +
                     std::to_string(n.shape[0]) + " heads");
  const int64_t lk = n.shape[1];
  return std::vector<float>(n.data.begin() + head * lk, n.data.begin() + (head + 1) * lk);
}

}  // namespace atlas
