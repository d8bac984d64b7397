#pragma once
// Direct logit attribution (DLA): the logit of a token (or the difference of two tokens' logits)
// at a position, split into what every component of a pre-norm residual stream writes into it,
// through the final norm with its scale frozen at the run's value:
//   x_final = embeddings + sum_l (attn_l + mlp_l),  attn_l = sum_h o_h W^O_h^T + b_O
//   logit_t = norm(x_final) . w_U[t] + b_out[t]
// The parts sum to the logit exactly up to float rounding. Formulas, sign conventions and the
// models it supports: docs/causal.md.
#include <cstdint>
#include <vector>

#include "core/model/model.h"

namespace atlas {

struct DlaRequest {
  std::vector<int64_t> positions;  // stream positions to attribute; empty = every position
  int64_t token = -1;    // the token whose logit is split; -1 = the run's argmax at each position
  int64_t against = -1;  // >= 0: split logit[token] - logit[against] (needs token >= 0)
  bool per_source = false;  // also split each head's part over its key positions
};

// Every array in double; P = positions attributed, in the request's order.
struct LogitAttribution {
  int64_t layers = 0, heads = 0, keys = 0;  // keys: the input's length (per_source's last axis)
  std::vector<int64_t> positions;           // [P]
  std::vector<int64_t> tokens;              // [P] the token attributed (argmax when not given)
  int64_t against = -1;                     // the subtracted token of a logit difference
  std::vector<double> embed_tokens;     // [P] token rows (scaled), token types, patches, [CLS]
  std::vector<double> embed_positions;  // [P] absolute position rows (0 for RoPE, ALiBi, none)
  std::vector<double> head;             // [P, layers, heads] o_h W^O_h^T through the frozen norm
  std::vector<double> attn_bias;        // [P, layers] b_O
  std::vector<double> mlp;              // [P, layers] the feed-forward output, its biases included
  std::vector<double> norm_bias;        // [P] the final norm's shift (LayerNorm beta) . w_U
  std::vector<double> output_bias;      // [P] the output head's bias
  std::vector<double> total;            // [P] sum of all the parts above
  std::vector<double> logit;            // [P] the model's own logit (difference) from the run
  std::vector<double> norm_scale;       // [P] the frozen divisor: sigma, rms or |x|
  // [layers, heads, P, keys] with per_source: a_ij (v_j W^O_h^T) . direction_i; sums over j to
  // head[i, layer, h] (b_V included, since sum_j a_ij = 1).
  std::vector<double> per_source;

  double head_part(int64_t p, int64_t l, int64_t h) const {
    return head[size_t((p * layers + l) * heads + h)];
  }
};

// Why `model` cannot be attributed, or "" when it can (pre-norm standard stack of one stream,
// an output head that is linear after the final norm).
std::string logit_attribution_refusal(const ModelConfig& c);

// Runs `model` on `source` (a decoder-only or encoder-only model's tokens) with activation hooks
// and attributes the requested logits. Throws AtlasError naming the problem for an unsupported
// model, a position outside the input, a token outside the vocabulary, or per_source on
// attention that is not dense softmax.
LogitAttribution logit_attribution(const Model& model, const std::vector<TokenInfo>& source,
                                   const DlaRequest& request, RunOptions options = {});

}  // namespace atlas
