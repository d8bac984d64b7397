#pragma once
// Cost estimates of a forward pass at a given length, before running it. The attention
// memory follows seed 003's worked example for BERT-base: per layer, the attention matrices
// heads * L^2 floats plus the queries and keys heads * d_head * L floats (about 162 MB per
// example at 512 tokens, 612 MB at 1024, counting MB as 2^20 bytes).
#include <cstdint>
#include <string>

#include "core/config/config.h"

namespace atlas {

struct CostEstimate {
  int64_t parameters = 0;
  double weight_bytes = 0;
  double attention_bytes = 0;  // seed 003 formula, summed over all attention layers
  double activation_bytes = 0;  // hidden states + FFN intermediates kept for the trace
  double flops = 0;             // multiply-adds counted as 2 FLOPs
};

CostEstimate estimate_cost(const ModelConfig& config, int64_t length);
std::string describe_architecture(const ModelConfig& config);  // multi-line, for `atlas info`

}  // namespace atlas
