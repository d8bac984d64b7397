#pragma once
// The Transformer-XL stack (equations in transformer_xl.cpp), written once over an XlExecutor
// for inference (transformer_xl.cpp's executor on the Backend) and training (the Builder's tape
// executor, core/train/train_model_impl.h). Per segment s of segment_length tokens and layer l:
//   keys from [M^l ; H^l] (the memory: the previous segments' inputs to layer l, last mem_len
//   rows, detached), queries from H^l; R W_kR^T over the distances the segment needs; the
//   relative attention; the residual, or GTrXL's gate in its place (both sub-layers); the
//   feed-forward sub-layer; then the final norm of a pre-norm stack over all segments' rows.
// No absolute positions are added to the embeddings: XL's positions are relative only.
#include <algorithm>
#include <concepts>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/model/attention_inputs.h"
#include "core/model/embeddings.h"
#include "core/model/executor.h"
#include "core/model/positional.h"
#include "core/model/transformer_block.h"
#include "core/variants/gtrxl/gtrxl.h"
#include "core/variants/transformer_xl/transformer_xl.h"

namespace atlas {

// Where an XL attention sub-layer sits: layer, segment, and the source position of its first
// key (memory rows first, so queries start at first_key + memory rows).
struct XlSite {
  int64_t layer = 0;
  int64_t segment = 0;
  int64_t first_key = 0;
};

// What the XL stack asks of an executor beyond the block's ops.
template <class E>
concept XlExecutor = Executor<E> &&
    requires(E e, const typename E::Value& x, const XlSite& site, int64_t n, GatedSublayer s) {
  { e.rows(x) } -> std::convertible_to<int64_t>;
  { e.concat_rows(x, x) } -> std::convertible_to<typename E::Value>;
  { e.slice_rows(x, n, n) } -> std::convertible_to<typename E::Value>;  // first, count
  // The memory carried to the next segment: no gradient flows into it (the reference's detach).
  { e.detach(x) } -> std::convertible_to<typename E::Value>;
  // What `linear` reads as "no bias" (W_kR has none, as in the reference's r_net).
  { e.no_bias() } -> std::convertible_to<typename E::Value>;
  // The heads' outputs [Lq, H*dh] of the relative attention of q [Lq, H*dh] over k, v
  // [Lk, H*dh] with rk [distances, H*dh] and the biases u, v [H, dh] (xl_attention_op.h / the
  // tape's xl_relative_attention); inference traces the maps here, training draws its dropout.
  { e.xl_attention(x, x, x, x, x, x, site) } -> std::convertible_to<typename E::Value>;
  // The heads' outputs through W^O (inference: after the run's head hooks; training: DropHead).
  { e.attention_output(x, std::string()) } -> std::convertible_to<typename E::Value>;
  // GTrXL's gate g(stream, sub-layer output) of one sub-layer (gtrxl.h).
  { e.gate(x, x, site, s) } -> std::convertible_to<typename E::Value>;
  // After a layer of a segment (inference traces the hidden state and reports progress).
  e.segment_layer_done(site, x);
};

// One XL attention sub-layer: xq [Lq, d] (normed current input), xkv [m + Lq, d] (normed memory
// + current) -> [Lq, d] after W^O.
template <XlExecutor E>
typename E::Value xl_attention_sublayer(E& e, const ModelConfig& c, const typename E::Value& xq,
                                        const typename E::Value& xkv, const XlSite& site) {
  using Value = typename E::Value;
  const std::string p = "decoder.layer" + std::to_string(site.layer) + ".self_attn";
  // Projections only: XL's positions are the relative terms, and its heads are not grouped.
  const AttentionInputs<Value> in = attention_inputs(
      e, c, xq, xkv, p, [](const Value& x, int) { return x; }, [](Value&, Value&) {});
  const Value &q = in.q, &k = in.k, &v = in.v;
  // R over the distances 0 .. max needed, projected by W_kR: rk [distances, H*dh].
  const int64_t max_dist = xl_max_distance(e.rows(xkv), c.xl()->clamp_len);
  const Value r = e.constant(sinusoid_table(max_dist + 1, c.d_model, SinusoidLayout::Concatenated));
  const Value rk = e.linear(r, e.weight(p + ".wr"), e.no_bias());
  const Value o = e.xl_attention(q, k, v, rk, e.weight("xl.u"), e.weight("xl.v"), site);
  return e.attention_output(o, p);
}

// tokens' ids [L] -> [L, d] (after the final norm of a pre-norm stack).
template <XlExecutor E>
typename E::Value xl_stack(E& e, const ModelConfig& c, const std::vector<int32_t>& ids) {
  using Value = typename E::Value;
  const XLConfig& xl = *c.xl();
  const int64_t L = static_cast<int64_t>(ids.size()), seg_len = xl.segment_length;
  const bool pre = c.norm_position == NormPosition::Pre;
  const Value table = token_table(e, c);
  std::vector<std::optional<Value>> memory(static_cast<size_t>(c.n_layers));  // none at first
  std::optional<Value> result;
  for (int64_t seg = 0, start = 0; start < L; ++seg, start += seg_len) {
    const int64_t lq = std::min(seg_len, L - start);
    const std::vector<int32_t> seg_ids(ids.begin() + start, ids.begin() + start + lq);
    // The stack's input hook sees each segment's embeddings (relative positions: none added).
    Value x = e.stack_input("decoder", e.residual_dropout(e.embedding(table, seg_ids, token_scale(c))));
    for (int64_t l = 0; l < c.n_layers; ++l) {
      const std::string p = "decoder.layer" + std::to_string(l);
      std::optional<Value>& mem = memory[static_cast<size_t>(l)];
      const int64_t mem_rows = mem ? e.rows(*mem) : 0;
      const Value cat = mem ? e.concat_rows(*mem, x) : x;  // [m + Lq, d]
      const XlSite site{l, seg, start - mem_rows};
      // GTrXL replaces the residual x + y of both sub-layers by a gate.
      auto residual = [&](const Value& stream, const Value& out, GatedSublayer s) {
        return c.gating() ? e.gate(stream, out, site, s) : e.add(stream, out);
      };
      Value y;
      if (pre) {
        const Value ncat = apply_norm(e, c, cat, p + ".self_attn_norm");
        const Value nq = mem_rows ? e.slice_rows(ncat, mem_rows, lq) : ncat;
        y = residual(x, e.residual_dropout(xl_attention_sublayer(e, c, nq, ncat, site)),
                     GatedSublayer::Attention);
      } else {
        y = apply_norm(e, c,
                       residual(x, e.residual_dropout(xl_attention_sublayer(e, c, x, cat, site)),
                                GatedSublayer::Attention),
                       p + ".self_attn_norm");
      }
      // Memory for the next segment: this layer's input, last mem_len rows, detached.
      const int64_t rows = mem_rows + lq, keep = std::min<int64_t>(xl.mem_len, rows);
      if (keep == 0)
        mem.reset();
      else
        mem = e.detach(keep == rows ? cat : e.slice_rows(cat, rows - keep, keep));
      if (c.gating()) {
        const Value h = pre ? apply_norm(e, c, y, p + ".ffn_norm") : y;
        x = residual(y, e.residual_dropout(e.ffn_output(p + ".ffn", feed_forward(e, c, h, p + ".ffn"))),
                     GatedSublayer::Ffn);
        if (!pre) x = apply_norm(e, c, x, p + ".ffn_norm");
      } else {
        x = residual_sublayer(e, c, y, p + ".ffn_norm",
                              [&](const Value& h) { return e.ffn_output(p + ".ffn", feed_forward(e, c, h, p + ".ffn")); });
      }
      e.segment_layer_done(site, x);
    }
    result = result ? e.concat_rows(*result, x) : x;
  }
  Value out = result ? *result : e.constant(Tensor({0, c.d_model}));
  return pre ? apply_norm(e, c, out, "decoder.final_norm") : out;
}

}  // namespace atlas
