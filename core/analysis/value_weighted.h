#pragma once
// Value-weighted attention (Kobayashi et al. 2020, "Attention is Not Only a Weight: Analyzing
// Transformers with Vector Norms"): what head h moves from key j into query i is the vector
// alpha_ij f_h(x_j), f_h(x_j) = W^O_h (W^V_h x_j + b^V_h); its norm alpha_ij |f_h(x_j)| shows
// how much actually flows, where the weight alone can be large on keys whose transformed values
// are small (the [SEP] and punctuation tokens of their paper). A run traced with
// TraceOptions::value_norms holds |f_h(x_j)| per map, its value_norms companion [heads, Lk].
#include <cstdint>
#include <vector>

#include "core/model/trace.h"

namespace atlas {

// |f_h(x_j)| for every key j of `map` [Lk]; the value-weighted map is alpha_ij times entry j.
// Throws AtlasError when the run did not trace them (naming the option) or the head is absent.
std::vector<float> value_norms(const Trace& trace, const AttentionMap& map, int64_t head);

}  // namespace atlas
