#pragma once
// SNAIL as a model (config.snail(), dispatched from Model::forward): the network of
// core/variants/snail/snail.h with its weights in the ParamStore, on the token embeddings, then a linear head:
//   x_t = embed.tokens[token t]                                  [L, d_model]
//   h = Attn, TC, Attn, ..., Attn (dilations from snail.length)  [L, C]
//   logits_t = h_t snail.output.w^T + snail.output.b             [L, vocab]
// Traced: decoder.layer<b>.self_attn [1, L, L] (the attention views' names, one "layer" per
// attention block), snail.receptive_field [L, L], snail.output [L, C], logits.
#include <vector>

#include "core/config/config.h"
#include "core/model/model.h"
#include "core/model/params.h"
#include "core/variants/snail/snail.h"

namespace atlas {

SnailSpec snail_spec(const ModelConfig& c);
std::vector<ParamSpec> snail_param_specs(const ModelConfig& c);
RunResult snail_model_forward(const ModelConfig& c, const ParamStore& params,
                              const std::vector<TokenInfo>& tokens, const RunOptions& options);

}  // namespace atlas
