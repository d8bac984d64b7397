// Transformer-XL (Dai et al. 2019; seeds 000, 001, 003; REFERENCES.md for the reference
// kimiyoung/transformer-xl). Per segment s and layer l, with memory M^l (the previous
// segments' inputs to layer l, last mem_len rows) and current input H^l:
//   keys/values from concat(M^l, H^l), queries from H^l; query i sits at key position p = m + i
//   A_ij = [ q_i.k_j  +  q_i.W_kR R_{p-j}  +  u.k_j  +  v.W_kR R_{p-j} ] / sqrt(d_head)
//            (a)          (b)                 (c)       (d)
//   R = [sin | cos] sinusoid over the distance p - j (clamped by clamp_len); u, v per head,
//   shared across layers; causal mask j <= p, and with same_length j > p - mem_len.
// GTrXL (core/gtrxl.cpp) replaces the two residual connections of each block by gates.
// The BD term is computed directly per (i, j) (no rel_shift), so no garbage entries exist.
// The reference keeps n_layer + 1 memories (the last one, the stack output, is never read at
// inference); only the n_layer memories that are attended to are kept here.
#include "transformer_xl.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "gtrxl.h"
#include "positional.h"

namespace atlas {

namespace {

std::string layer_prefix(int64_t l) { return "decoder.layer" + std::to_string(l); }

Mat linear_host(const Mat& x, const Tensor& w, const Tensor* b) {  // x W^T + b
  Mat y = x * w.mat().transpose();
  if (b)
    for (int64_t r = 0; r < y.rows(); ++r)
      for (int64_t k = 0; k < y.cols(); ++k) y(r, k) += b->data[size_t(k)];
  return y;
}

Mat stack_rows(const Mat& a, const Mat& b) {
  Mat out(a.rows() + b.rows(), b.cols());
  if (a.rows()) out.topRows(a.rows()) = a;
  out.bottomRows(b.rows()) = b;
  return out;
}

}  // namespace

int64_t xl_segments(const ModelConfig& c, int64_t length) {
  return (length + c.xl.segment_length - 1) / c.xl.segment_length;
}

bool xl_key_visible(int64_t p, int64_t j, int64_t mem_len, bool same_length) {
  if (j > p) return false;
  return !same_length || j > p - mem_len;
}

int64_t xl_distance(int64_t p, int64_t j, int64_t clamp_len) {
  const int64_t dist = p - j;
  return clamp_len >= 0 ? std::min(dist, clamp_len) : dist;
}

void append_xl_specs(std::vector<ParamSpec>& specs, const ModelConfig& c) {
  specs.push_back({"xl.u", {c.n_heads, c.d_head()}});
  specs.push_back({"xl.v", {c.n_heads, c.d_head()}});
  for (int64_t l = 0; l < c.n_layers; ++l)
    specs.push_back({layer_prefix(l) + ".self_attn.wr", {c.d_model, c.d_model}});
}

namespace {

// One XL attention sub-layer on the host: xq [Lq, d] (normed current input), xkv [m + Lq, d]
// (normed memory + current) -> [Lq, d] after W^O.
Mat xl_attention(ForwardPass& pass, const Mat& xq, const Mat& xkv, int64_t l, int64_t seg,
                 int64_t first_key_pos) {
  const ModelConfig& c = pass.config();
  Backend& be = pass.backend();
  const TraceOptions& topt = pass.options().trace;
  const std::string p = layer_prefix(l) + ".self_attn";
  auto w = [&](const std::string& n) { return be.download(pass.weight(p + "." + n)); };
  auto opt = [&](const std::string& n) {
    DTensor t = pass.optional_weight(p + "." + n);
    return t ? std::optional<Tensor>(be.download(t)) : std::nullopt;
  };
  const auto bq = opt("bq"), bk = opt("bk"), bv = opt("bv"), bo = opt("bo");
  const Mat q = linear_host(xq, w("wq"), bq ? &*bq : nullptr);   // [Lq, H*dh]
  const Mat k = linear_host(xkv, w("wk"), bk ? &*bk : nullptr);  // [Lk, H*dh]
  const Mat v = linear_host(xkv, w("wv"), bv ? &*bv : nullptr);  // [Lk, H*dh]
  const int64_t H = c.n_heads, dh = c.d_head(), lq = xq.rows(), lk = xkv.rows(), m = lk - lq;
  const XLConfig& x = c.xl;
  // R over distances 0 .. max needed, projected by W_kR: rk [ndist, H*dh].
  const int64_t max_dist = x.clamp_len >= 0 ? std::min(lk - 1, x.clamp_len) : lk - 1;
  const Tensor r = sinusoid_table(max_dist + 1, c.d_model, SinusoidLayout::Concatenated);
  const Mat rk = linear_host(r.mat(), w("wr"), nullptr);
  const Mat u = be.download(pass.weight("xl.u")).mat(), vb = be.download(pass.weight("xl.v")).mat();
  const float scale = 1.0f / std::sqrt(float(dh));
  const float ninf = -std::numeric_limits<float>::infinity();

  const bool trace_terms = topt.scores;
  Tensor probs_t({H, lq, lk}), scores_t, ta, tb, tc, td;
  if (trace_terms) scores_t = ta = tb = tc = td = Tensor({H, lq, lk});
  Mat out(lq, H * dh);
  Mat s(lq, lk);
  for (int64_t h = 0; h < H; ++h) {
    const auto qh = q.middleCols(h * dh, dh), kh = k.middleCols(h * dh, dh), vh = v.middleCols(h * dh, dh);
    const auto rh = rk.middleCols(h * dh, dh);
    const Mat ac = qh * kh.transpose();                    // (a) [Lq, Lk]
    const Eigen::VectorXf ck = kh * u.row(h).transpose();  // (c) [Lk]
    for (int64_t i = 0; i < lq; ++i) {
      const int64_t pos = m + i;
      for (int64_t j = 0; j < lk; ++j) {
        if (!xl_key_visible(pos, j, x.mem_len, x.same_length)) {
          s(i, j) = ninf;
          continue;
        }
        const int64_t dist = xl_distance(pos, j, x.clamp_len);
        const float b = qh.row(i).dot(rh.row(dist)), d = vb.row(h).dot(rh.row(dist));
        s(i, j) = (ac(i, j) + b + ck(j) + d) * scale;
        if (trace_terms) {
          const size_t o = size_t((h * lq + i) * lk + j);
          ta.data[o] = ac(i, j) * scale;
          tb.data[o] = b * scale;
          tc.data[o] = ck(j) * scale;
          td.data[o] = d * scale;
        }
      }
    }
    Mat a(lq, lk);
    for (int64_t i = 0; i < lq; ++i) {
      const float mx = s.row(i).maxCoeff();
      float sum = 0.0f;
      for (int64_t j = 0; j < lk; ++j) sum += a(i, j) = s(i, j) == ninf ? 0.0f : std::exp(s(i, j) - mx);
      a.row(i) /= sum;  // the diagonal key is always visible (mem_len >= 1 with same_length)
    }
    out.middleCols(h * dh, dh) = a * vh;
    if (topt.attention)
      std::copy(a.data(), a.data() + lq * lk, probs_t.data.begin() + h * lq * lk);
    if (trace_terms) std::copy(s.data(), s.data() + lq * lk, scores_t.data.begin() + h * lq * lk);
  }
  Trace& trace = pass.trace();
  const std::string name = "decoder.seg" + std::to_string(seg) + ".layer" + std::to_string(l) + ".self_attn";
  if (topt.attention) trace.add(name, "attention probabilities, keys = memory + segment [heads, Lq, Lk]", std::move(probs_t));
  if (trace_terms) {
    trace.add(name + ".scores", "pre-softmax scores (a + b + c + d), -inf where masked [heads, Lq, Lk]", std::move(scores_t));
    const std::string t = "xl.seg" + std::to_string(seg) + ".layer" + std::to_string(l) + ".terms.";
    trace.add(t + "a", "(a) content q_i.k_j / sqrt(d_head), 0 where masked [heads, Lq, Lk]", std::move(ta));
    trace.add(t + "b", "(b) content-dependent position q_i.W_kR R_{i-j} / sqrt(d_head) [heads, Lq, Lk]", std::move(tb));
    trace.add(t + "c", "(c) global content bias u.k_j / sqrt(d_head) [heads, Lq, Lk]", std::move(tc));
    trace.add(t + "d", "(d) global position bias v.W_kR R_{i-j} / sqrt(d_head) [heads, Lq, Lk]", std::move(td));
  }
  if (topt.masks && l == 0) {
    Tensor ks({lk});
    for (int64_t j = 0; j < lk; ++j)
      ks.data[size_t(j)] = float((first_key_pos + j) / x.segment_length);
    trace.add("xl.seg" + std::to_string(seg) + ".key_segment",
              "segment each key column came from (< seg: memory) [Lk]", std::move(ks), DType::I32);
  }
  return linear_host(out, w("wo"), bo ? &*bo : nullptr);
}

}  // namespace

DTensor xl_forward(ForwardPass& pass, const std::vector<TokenInfo>& tokens) {
  const ModelConfig& c = pass.config();
  Backend& be = pass.backend();
  const int64_t L = int64_t(tokens.size()), d = c.d_model, S = c.xl.segment_length;
  be.note_host_compute(Op::XlAttention);
  const bool pre = c.norm_position == NormPosition::Pre;
  DTensor table = pass.weight("embed.tokens");
  if (c.fixnorm) table = be.row_normalize(table, 1e-5f);
  auto norm = [&](const Mat& x, const std::string& prefix) -> Mat {
    return be.download(pass.norm(be.upload(Tensor::from_mat(x)), prefix)).mat();
  };
  std::vector<Mat> mem(size_t(c.n_layers), Mat(0, d));  // [<= mem_len, d] per layer
  Mat result(L, d);
  for (int64_t seg = 0, start = 0; start < L; ++seg, start += S) {
    const int64_t lq = std::min(S, L - start);
    std::vector<int32_t> ids;
    for (int64_t t = start; t < start + lq; ++t) ids.push_back(tokens[size_t(t)].id);
    Mat x = be.download(be.embedding(table, ids, c.scale_embedding ? std::sqrt(float(d)) : 1.0f)).mat();
    for (int64_t l = 0; l < c.n_layers; ++l) {
      const std::string p = layer_prefix(l);
      const Mat cat = stack_rows(mem[size_t(l)], x);  // [m + Lq, d]
      const int64_t first_key = start - mem[size_t(l)].rows();
      // GTrXL replaces the residual x + y of both sub-layers by a gate (core/gtrxl.cpp).
      auto residual = [&](const Mat& stream, const Mat& out, GatedSublayer s) -> Mat {
        if (c.gating.enabled) return gtrxl_combine(pass, stream, out, l, seg, s);
        return stream + out;
      };
      Mat y;
      if (pre) {
        const Mat ncat = norm(cat, p + ".self_attn_norm");
        y = residual(x, xl_attention(pass, ncat.bottomRows(lq), ncat, l, seg, first_key), GatedSublayer::Attention);
      } else {
        y = norm(residual(x, xl_attention(pass, x, cat, l, seg, first_key), GatedSublayer::Attention),
                 p + ".self_attn_norm");
      }
      // Memory for the next segment: this layer's input, last mem_len rows (detached).
      const int64_t keep = std::min<int64_t>(c.xl.mem_len, cat.rows());
      mem[size_t(l)] = cat.bottomRows(keep);
      if (c.gating.enabled) {
        const Mat f = be.download(pass.ffn(be.upload(Tensor::from_mat(pre ? norm(y, p + ".ffn_norm") : y)), p + ".ffn")).mat();
        x = residual(y, f, GatedSublayer::Ffn);
        if (!pre) x = norm(x, p + ".ffn_norm");
      } else {
        DTensor yd = be.upload(Tensor::from_mat(y));
        x = be.download(pass.sublayer(yd, p + ".ffn_norm", [&](const DTensor& h) { return pass.ffn(h, p + ".ffn"); })).mat();
      }
      if (pass.options().trace.hidden)
        pass.trace().add("decoder.seg" + std::to_string(seg) + ".layer" + std::to_string(l) + ".hidden",
                         "hidden state after the layer [Lq, d]", Tensor::from_mat(x));
      pass.step("segment " + std::to_string(seg) + " layer " + std::to_string(l));
    }
    result.middleRows(start, lq) = x;
  }
  DTensor h = be.upload(Tensor::from_mat(result));
  if (pre) h = pass.norm(h, "decoder.final_norm");
  return h;
}

}  // namespace atlas
