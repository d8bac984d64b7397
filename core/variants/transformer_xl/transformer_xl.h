#pragma once
// Transformer-XL (core/variants/transformer_xl/transformer_xl.cpp), dispatched from Model::forward.
#include <vector>

#include "core/model/forward_pass.h"

namespace atlas {

// Runs a decoder-only XL model segment by segment (segment_length tokens each) with the
// per-layer memory of the previous segments, and returns the final state [L, d] of every
// position (after the final norm of pre-norm models). Only mem_len rows per layer are kept.
DTensor xl_forward(ForwardPass& pass, const std::vector<TokenInfo>& tokens);

// u, v [heads, d_head] (shared across layers) and W_kR per layer (`<layer>.self_attn.wr`).
void append_xl_specs(std::vector<ParamSpec>& specs, const ModelConfig& c);

// Number of segments a text of `length` tokens is cut into.
int64_t xl_segments(const ModelConfig& c, int64_t length);

// Key j (0-based over memory + current keys) is visible to the query at key position p:
// causal (j <= p) and, with same_length, within the last mem_len keys (p - mem_len < j).
bool xl_key_visible(int64_t p, int64_t j, int64_t mem_len, bool same_length);

// Relative distance p - j used to index R, clamped to clamp_len when clamp_len > 0. As in the
// reference (mem_transformer.py: `if self.clamp_len > 0: pos_seq.clamp_(max=...)`), 0 and -1
// both mean "no clamping".
int64_t xl_distance(int64_t p, int64_t j, int64_t clamp_len);
// The largest distance R needs a row for, over `keys` keys (memory + segment).
int64_t xl_max_distance(int64_t keys, int64_t clamp_len);

}  // namespace atlas
