// Transformer-XL (Dai et al. 2019; seeds 000, 001, 003; REFERENCES.md for the reference
// kimiyoung/transformer-xl). Per segment s and layer l, with memory M^l (the previous
// segments' inputs to layer l, last mem_len rows) and current input H^l:
//   keys/values from concat(M^l, H^l), queries from H^l; query i sits at key position p = m + i
//   A_ij = [ q_i.k_j  +  q_i.W_kR R_{p-j}  +  u.k_j  +  v.W_kR R_{p-j} ] / sqrt(d_head)
//            (a)          (b)                 (c)       (d)
//   R = [sin | cos] sinusoid over the distance p - j (clamped by clamp_len); u, v per head,
//   shared across layers; causal mask j <= p, and with same_length j > p - mem_len.
// GTrXL (core/variants/gtrxl/gtrxl.cpp) replaces the two residual connections of each block by gates.
// The BD term is computed directly per (i, j) (no rel_shift), so no garbage entries exist.
// The reference keeps n_layer + 1 memories (the last one, the stack output, is never read at
// inference); only the n_layer memories that are attended to are kept here.
#include "core/variants/transformer_xl/transformer_xl.h"
#include "core/variants/transformer_xl/xl_arrays.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "core/model/positional.h"
#include "core/variants/gtrxl/gtrxl.h"
#include "core/variants/transformer_xl/xl_attention_op.h"

namespace atlas {

namespace {

std::string layer_prefix(int64_t l) { return "decoder.layer" + std::to_string(l); }

}  // namespace

int64_t xl_segments(const ModelConfig& c, int64_t length) {
  return (length + c.xl()->segment_length - 1) / c.xl()->segment_length;
}

bool xl_key_visible(int64_t p, int64_t j, int64_t mem_len, bool same_length) {
  if (j > p) return false;
  return !same_length || j > p - mem_len;
}

int64_t xl_distance(int64_t p, int64_t j, int64_t clamp_len) {
  const int64_t dist = p - j;
  return clamp_len > 0 ? std::min(dist, clamp_len) : dist;
}

int64_t xl_max_distance(int64_t keys, int64_t clamp_len) {
  return clamp_len > 0 ? std::min(keys - 1, clamp_len) : keys - 1;
}

void append_xl_specs(std::vector<ParamSpec>& specs, const ModelConfig& c) {
  specs.push_back({"xl.u", {c.n_heads, c.d_head()}});
  specs.push_back({"xl.v", {c.n_heads, c.d_head()}});
  for (int64_t l = 0; l < c.n_layers; ++l)
    specs.push_back({layer_prefix(l) + ".self_attn.wr", {c.d_model, c.d_model}});
}

namespace {

// One XL attention sub-layer on the backend: xq [Lq, d] (normed current input), xkv
// [m + Lq, d] (normed memory + current) -> [Lq, d] after W^O; the scores go through the
// xl_attention module op (core/variants/transformer_xl/xl_attention_op.h).
DTensor xl_attention_sublayer(ForwardPass& pass, const DTensor& xq, const DTensor& xkv, int64_t l,
                              int64_t seg, int64_t first_key_pos) {
  const ModelConfig& c = pass.config();
  Backend& be = pass.backend();
  const TraceOptions& topt = pass.options().trace;
  const std::string p = layer_prefix(l) + ".self_attn";
  auto proj = [&](const DTensor& x, const char* w, const char* b) {
    return be.linear(x, pass.weight(p + "." + w), pass.optional_weight(p + "." + b));
  };
  const DTensor q = proj(xq, "wq", "bq"), k = proj(xkv, "wk", "bk"), v = proj(xkv, "wv", "bv");
  const int64_t lk = xkv.shape[0];
  const XLConfig& x = std::get<XLConfig>(c.stack);
  // R over distances 0 .. max needed, projected by W_kR: rk [ndist, H*dh].
  const int64_t max_dist = xl_max_distance(lk, x.clamp_len);
  const Tensor r = sinusoid_table(max_dist + 1, c.d_model, SinusoidLayout::Concatenated);
  const DTensor rk = be.linear(be.upload(r), pass.weight(p + ".wr"), {});
  XlAttentionArgs args;
  args.heads = int(c.n_heads);
  args.scale = 1.0f / std::sqrt(float(c.d_head()));
  args.mem_len = x.mem_len;
  args.same_length = x.same_length;
  args.clamp_len = x.clamp_len;
  args.want_probs = topt.attention;
  args.want_terms = topt.scores;
  const XlAttentionResult a =
      xl_attention(be, q, k, v, rk, pass.weight("xl.u"), pass.weight("xl.v"), args);
  AttentionMap site = attention_site("decoder", "self_attn", l);
  site.segment = seg;
  const std::string name = attention_array_name(site);
  if (topt.value_norms) pass.trace_value_norms(name, v, p);
  if (topt.attention) {
    // Queries are this segment's tokens; keys the cached memory (earlier tokens) then the segment.
    const int64_t lq = xq.shape[0];
    site.array = name;
    site.kind = AttentionMapKind::Memory;
    site.memory_keys = lk - lq;
    site.queries = {TokenSide::Source, first_key_pos + site.memory_keys, lq};
    site.keys = {TokenSide::Source, first_key_pos, lk};
    pass.trace().describe_attention(std::move(site));
    pass.trace_later(name, "attention probabilities, keys = memory + segment [heads, Lq, Lk]", a.probs);
    if (topt.masks) {  // query i sits at key position m + i (xl_key_visible)
      const int64_t m = lk - lq;
      Tensor mask({lq, lk});
      for (int64_t i = 0; i < lq; ++i)
        for (int64_t j = 0; j < lk; ++j)
          mask.data[size_t(i * lk + j)] = xl_key_visible(m + i, j, x.mem_len, x.same_length) ? 1.0f : 0.0f;
      pass.trace().add(name + ".mask", "allowed keys (1) per query: causal over memory + segment [Lq, Lk]",
                       std::move(mask), DType::I32);
    }
  }
  if (topt.scores) {
    pass.trace_later(name + ".scores", "pre-softmax scores (a + b + c + d), -inf where masked [heads, Lq, Lk]", a.scores);
    pass.trace_later(xl_arrays::term(seg, l, 'a'), "(a) content q_i.k_j / sqrt(d_head), 0 where masked [heads, Lq, Lk]", a.term_a);
    pass.trace_later(xl_arrays::term(seg, l, 'b'), "(b) content-dependent position q_i.W_kR R_{i-j} / sqrt(d_head) [heads, Lq, Lk]", a.term_b);
    pass.trace_later(xl_arrays::term(seg, l, 'c'), "(c) global content bias u.k_j / sqrt(d_head) [heads, Lq, Lk]", a.term_c);
    pass.trace_later(xl_arrays::term(seg, l, 'd'), "(d) global position bias v.W_kR R_{i-j} / sqrt(d_head) [heads, Lq, Lk]", a.term_d);
  }
  if (topt.masks && l == 0) {
    Tensor ks({lk});
    for (int64_t j = 0; j < lk; ++j)
      ks.data[size_t(j)] = float((first_key_pos + j) / x.segment_length);
    pass.trace().add(xl_arrays::key_segment(seg),
                     "segment each key column came from (< seg: memory) [Lk]", std::move(ks), DType::I32);
  }
  return pass.attention_output(a.out, p);
}

}  // namespace

DTensor xl_forward(ForwardPass& pass, const std::vector<TokenInfo>& tokens) {
  const ModelConfig& c = pass.config();
  Backend& be = pass.backend();
  const int64_t L = int64_t(tokens.size()), d = c.d_model, S = c.xl()->segment_length;
  const bool pre = c.norm_position == NormPosition::Pre;
  DTensor table = pass.weight("embed.tokens");
  if (c.fixnorm) table = be.row_normalize(table, 1e-5f);
  std::vector<DTensor> mem(size_t(c.n_layers));  // [<= mem_len, d] per layer; empty at first
  DTensor result;
  for (int64_t seg = 0, start = 0; start < L; ++seg, start += S) {
    const int64_t lq = std::min(S, L - start);
    std::vector<int32_t> ids;
    for (int64_t t = start; t < start + lq; ++t) ids.push_back(tokens[size_t(t)].id);
    DTensor x = be.embedding(table, ids, c.scale_embedding ? std::sqrt(float(d)) : 1.0f);
    for (int64_t l = 0; l < c.n_layers; ++l) {
      const std::string p = layer_prefix(l);
      const DTensor& m = mem[size_t(l)];
      const int64_t mem_rows = m ? m.shape[0] : 0;
      const DTensor cat = mem_rows ? be.concat_rows(m, x) : x;  // [m + Lq, d]
      const int64_t first_key = start - mem_rows;
      // GTrXL replaces the residual x + y of both sub-layers by a gate
      // (core/variants/gtrxl/gtrxl.cpp, the gtrxl_gate module op).
      auto residual = [&](const DTensor& stream, const DTensor& out, GatedSublayer s) -> DTensor {
        if (!c.gating()) return be.add(stream, out);
        return gtrxl_combine(pass, stream, out, l, seg, s);
      };
      DTensor y;
      if (pre) {
        const DTensor ncat = pass.norm(cat, p + ".self_attn_norm");
        const DTensor nq = mem_rows ? be.slice_rows(ncat, mem_rows, lq) : ncat;
        y = residual(x, xl_attention_sublayer(pass, nq, ncat, l, seg, first_key),
                     GatedSublayer::Attention);
      } else {
        y = pass.norm(residual(x, xl_attention_sublayer(pass, x, cat, l, seg, first_key),
                               GatedSublayer::Attention),
                      p + ".self_attn_norm");
      }
      // Memory for the next segment: this layer's input, last mem_len rows (detached).
      const int64_t rows = mem_rows + lq, keep = std::min<int64_t>(c.xl()->mem_len, rows);
      mem[size_t(l)] = keep == rows ? cat : keep > 0 ? be.slice_rows(cat, rows - keep, keep) : DTensor{};
      if (c.gating()) {
        const DTensor f = pass.ffn(pre ? pass.norm(y, p + ".ffn_norm") : y, p + ".ffn");
        x = residual(y, f, GatedSublayer::Ffn);
        if (!pre) x = pass.norm(x, p + ".ffn_norm");
      } else {
        x = pass.sublayer(y, p + ".ffn_norm", [&](const DTensor& h) { return pass.ffn(h, p + ".ffn"); });
      }
      if (pass.options().trace.hidden)
        pass.trace_later("decoder.seg" + std::to_string(seg) + ".layer" + std::to_string(l) + ".hidden",
                         "hidden state after the layer [Lq, d]", x);
      pass.step("segment " + std::to_string(seg) + " layer " + std::to_string(l));
    }
    result = result ? be.concat_rows(result, x) : x;
  }
  if (!result) result = be.upload(Tensor({0, d}));
  if (pre) result = pass.norm(result, "decoder.final_norm");
  return result;
}

}  // namespace atlas
