#pragma once
// Attention flow (Abnar & Zuidema 2020, "Quantifying Attention Flow in Transformers"): the
// layers as a flow network whose nodes are the tokens before and after every layer and whose
// edge from token j below to token i above carries capacity A~_l[i, j] (the head-averaged
// attention plus the residual, rows renormalised: attention_rollout.h's matrices). The flow
// from input token j to output token i is the maximum flow from node (0, j) to node (n, i):
// unlike rollout's products it is limited by the narrowest layer on every path.
//
// One max-flow per (query, key) pair: L^2 of them, each over n L^2 edges, so the whole matrix
// is for short inputs (kAttentionFlowFullLimit tokens); longer inputs compute chosen rows.
#include <cstdint>
#include <string>
#include <vector>

#include "core/model/trace.h"

namespace atlas {

constexpr int64_t kAttentionFlowFullLimit = 48;

// The maximum flow from input j (row 0 of the first layer's matrix) to output i through
// `layers` ([L, L] capacity matrices, first layer first, row = receiving token): [L, L], rows
// not in `rows` (when given) NaN. Throws AtlasError for an empty or ragged list.
Tensor attention_flow(const std::vector<Tensor>& layers, const std::vector<int64_t>& rows = {});

// The flow of `stack`'s layers 0..last (-1: all) read from the trace. Without `rows`, inputs
// longer than kAttentionFlowFullLimit are refused with the reason; with `rows`, only those
// output tokens are computed.
Tensor attention_flow(const Trace& trace, const std::string& stack, int64_t last = -1,
                      const std::vector<int64_t>& rows = {});

}  // namespace atlas
