#pragma once
// Why a head attends from query i to key j: its pre-softmax score split into query-side x
// key-side contributions of every component that wrote into the residual stream before the
// head's layer, with the attention's norm frozen at the run's scale (it is then linear):
//   x_p = sum_c x_c(p)   (token embedding, absolute positions, each earlier head, each earlier
//                         attention bias b_O, each earlier MLP)
//   y_c(p) = norm-frozen x_c(p)          (LayerNorm: centred, / sigma_p, * gamma; RMSNorm:
//                                         / rms_p * gamma; ScaleNorm: g / |x_p|)
//   q_c = R_i W_Q^h y_c(i), k_c' = R_j W_K^g y_c'(j)   (R: RoPE's rotation, identity otherwise)
//   bias row / column: W_Q^h beta + b_Q (keys: W_K^g beta + b_K), rotated the same way
//   cell(c, c') = scale * q_c . k_c',  scale = 1/sqrt(d_head)
// plus named extra columns: "alibi" (the constant -m_h |i - j|, in the bias row) and
// "shaw.relative_key" (scale * q_c . a^K_{clip(j-i)}). The cells sum to the traced score up to
// float rounding. The value path splits the head's output at i, o_h(i) W^O_h^T, over the same
// key-side components: sum_j a_ij W^O_h (W_V^g y_c(j)) (+ the bias and Shaw's a^V terms).
// Transformer-XL (qk_decomposition_xl.cpp) adds its relative terms as named rows and a column:
//   (a) content rows x content columns, (b) content rows x "xl.relative_position",
//   (c) the row "xl.u (global content bias)" x content columns, (d) the row "xl.v (global
//   position bias)" x "xl.relative_position"; a post-norm stack's later norms frozen too.
// Formulas, conventions and supported models: docs/causal.md.
#include <cstdint>
#include <string>
#include <vector>

#include "core/model/model.h"

namespace atlas {

struct QkRequest {
  int64_t layer = 0, head = 0;  // the head whose score is split (layer of the model's one stream)
  int64_t query = 0, key = 0;   // positions i and j
  bool value = false;           // also split the head's output at the query (the value path)
};

struct QkDecomposition {
  int64_t layer = 0, head = 0, kv_head = 0, query = 0, key = 0, d_model = 0;
  std::vector<std::string> rows;     // query-side components
  std::vector<std::string> columns;  // key-side components (the same names), then the extra terms
  std::vector<double> cells;         // [rows, columns]
  double scale = 0;                  // the score's factor, 1/sqrt(d_head)
  double query_norm_scale = 0, key_norm_scale = 0;  // the frozen divisors at i and j
  double total = 0;  // sum of the cells
  double score = 0;  // the engine's traced pre-softmax score of (head, i, j)
  // Transformer-XL: the segment of the query (its trace's segment) and whether the key is in the
  // memory (an earlier segment's cached layer input); -1 and false for other models.
  int64_t segment = -1;
  bool key_in_memory = false;
  // With request.value: [value_names, d_model] each key-side component's part of the head's
  // output at i, their projections on that output (part . o / |o|, summing to |o|), and o itself.
  std::vector<std::string> value_names;
  std::vector<double> value_parts;
  std::vector<double> value_projection;
  std::vector<double> head_output;  // [d_model] o_h(i) W^O_h^T from the run

  double cell(size_t r, size_t c) const { return cells[r * columns.size() + c]; }
};

// Why `model` cannot be decomposed, or "" when it can: a pre-norm decoder-only or encoder-only
// stack of standard layers with scaled-dot softmax attention (absolute positions, RoPE, ALiBi or
// Shaw relative positions), or a Transformer-XL decoder (pre- or post-norm, not GTrXL's gates).
std::string qk_decomposition_refusal(const ModelConfig& c);

// Runs `model` on `source` with activation hooks and splits the score. Throws AtlasError naming
// the problem for an unsupported model, a layer, head or position out of range, a key after the
// query of a causal model, or a key the mask forbids.
QkDecomposition qk_decomposition(const Model& model, const std::vector<TokenInfo>& source,
                                 const QkRequest& request, RunOptions options = {});

}  // namespace atlas
