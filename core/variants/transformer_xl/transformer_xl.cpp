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

#include "core/variants/gtrxl/gtrxl.h"
#include "core/variants/transformer_xl/xl_attention_op.h"
#include "core/variants/transformer_xl/xl_stack.h"

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

// The XL stack's executor on the Backend (xl_stack.h): the relative attention through the
// xl_attention module op (xl_attention_op.h), its maps and score terms traced and described in
// the catalogue, GTrXL's gates through gtrxl_combine; no dropout, and the memory a device
// tensor.
class XlBackendExecutor : public BackendExecutor {
 public:
  explicit XlBackendExecutor(ForwardPass& pass) : BackendExecutor(pass) {}
  static int64_t rows(const DTensor& x) { return x.shape[0]; }
  DTensor concat_rows(const DTensor& a, const DTensor& b) { return be_.concat_rows(a, b); }
  DTensor slice_rows(const DTensor& x, int64_t first, int64_t count) {
    return be_.slice_rows(x, first, count);
  }
  static DTensor detach(const DTensor& x) { return x; }
  static DTensor no_bias() { return {}; }
  DTensor gate(const DTensor& stream, const DTensor& out, const XlSite& site, GatedSublayer s) {
    return gtrxl_combine(pass_, stream, out, site.layer, site.segment, s);
  }
  void segment_layer_done(const XlSite& site, const DTensor& x) {
    const std::string seg = std::to_string(site.segment), layer = std::to_string(site.layer);
    if (pass_.options().trace.hidden)
      pass_.trace_later("decoder.seg" + seg + ".layer" + layer + ".hidden",
                        "hidden state after the layer [Lq, d]", x);
    pass_.step("segment " + seg + " layer " + layer);
  }
  DTensor xl_attention(const DTensor& q, const DTensor& k, const DTensor& v, const DTensor& rk,
                       const DTensor& u, const DTensor& vb, const XlSite& at);
};

DTensor XlBackendExecutor::xl_attention(const DTensor& q, const DTensor& k, const DTensor& v,
                                        const DTensor& rk, const DTensor& u, const DTensor& vb,
                                        const XlSite& at) {
  const ModelConfig& c = pass_.config();
  const TraceOptions& topt = pass_.options().trace;
  const XLConfig& x = *c.xl();
  const int64_t lq = q.shape[0], lk = k.shape[0], l = at.layer, seg = at.segment;
  XlAttentionArgs args;
  args.heads = int(c.n_heads);
  args.scale = 1.0f / std::sqrt(float(c.d_head()));
  args.mem_len = x.mem_len;
  args.same_length = x.same_length;
  args.clamp_len = x.clamp_len;
  args.want_probs = topt.attention;
  args.want_terms = topt.scores;
  const XlAttentionResult a = atlas::xl_attention(be_, q, k, v, rk, u, vb, args);
  AttentionMap site = attention_site("decoder", "self_attn", l);
  site.segment = seg;
  const std::string name = attention_array_name(site);
  if (topt.value_norms) pass_.trace_value_norms(name, v, layer_prefix(l) + ".self_attn");
  if (topt.qk) {  // what the query-key embedding reads: the content side of the score, term (a)
    pass_.trace_later(companion_array_name(name, Companion::Queries),
                      "content queries, heads side by side: term (a) is q_i.k_j; the biases u, v and the relative "
                      "terms (b), (d) are not in them [Lq, heads*d_head]", q);
    pass_.trace_later(companion_array_name(name, Companion::Keys),
                      "content keys of memory + segment, heads side by side [Lk, heads*d_head]", k);
  }
  if (topt.attention) {
    // Queries are this segment's tokens; keys the cached memory (earlier tokens) then the segment.
    site.array = name;
    site.kind = AttentionMapKind::Memory;
    site.memory_keys = lk - lq;
    site.queries = {TokenSide::Source, at.first_key + site.memory_keys, lq};
    site.keys = {TokenSide::Source, at.first_key, lk};
    pass_.trace().describe_attention(std::move(site));
    pass_.trace_later(name, "attention probabilities, keys = memory + segment [heads, Lq, Lk]", a.probs);
    if (topt.masks) {  // query i sits at key position m + i (xl_key_visible)
      const int64_t m = lk - lq;
      Tensor mask({lq, lk});
      for (int64_t i = 0; i < lq; ++i)
        for (int64_t j = 0; j < lk; ++j)
          mask.data[size_t(i * lk + j)] = xl_key_visible(m + i, j, x.mem_len, x.same_length) ? 1.0f : 0.0f;
      pass_.trace().add(companion_array_name(name, Companion::Mask), "allowed keys (1) per query: causal over memory + segment [Lq, Lk]",
                        std::move(mask), DType::I32);
    }
  }
  if (topt.scores) {
    pass_.trace_later(companion_array_name(name, Companion::Scores), "pre-softmax scores (a + b + c + d), -inf where masked [heads, Lq, Lk]", a.scores);
    pass_.trace_later(xl_arrays::term(seg, l, 'a'), "(a) content q_i.k_j / sqrt(d_head), 0 where masked [heads, Lq, Lk]", a.term_a);
    pass_.trace_later(xl_arrays::term(seg, l, 'b'), "(b) content-dependent position q_i.W_kR R_{i-j} / sqrt(d_head) [heads, Lq, Lk]", a.term_b);
    pass_.trace_later(xl_arrays::term(seg, l, 'c'), "(c) global content bias u.k_j / sqrt(d_head) [heads, Lq, Lk]", a.term_c);
    pass_.trace_later(xl_arrays::term(seg, l, 'd'), "(d) global position bias v.W_kR R_{i-j} / sqrt(d_head) [heads, Lq, Lk]", a.term_d);
  }
  if (topt.masks && l == 0) {
    Tensor ks({lk});
    for (int64_t j = 0; j < lk; ++j)
      ks.data[size_t(j)] = float((at.first_key + j) / x.segment_length);
    pass_.trace().add(xl_arrays::key_segment(seg),
                      "segment each key column came from (< seg: memory) [Lk]", std::move(ks), DType::I32);
  }
  return a.out;
}

}  // namespace

DTensor xl_forward(ForwardPass& pass, const std::vector<TokenInfo>& tokens) {
  XlBackendExecutor e(pass);
  return xl_stack(e, pass.config(), token_ids(tokens));
}

}  // namespace atlas
