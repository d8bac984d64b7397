// The QK decomposition of a Transformer-XL head (qk_decomposition_xl.h, docs/causal.md).
// The run is the engine's, segment by segment; what it leaves is read by input position p:
// the heads' outputs before W^O of every layer (the head hook, called once per segment) and
// every layer's output x_{l+1}(p) (the traced hidden states); x_0(p) is the token embedding.
// A layer's input x_l(p) is then split into components by walking the layers before it at
// position p: each head's W^O_h o_h(p), the attention bias b_O, and
//   post-norm (the authors' XL: y = LN1(x + attn), x' = LN2(y + FF(y))): every component so far
//     through LN1 frozen at that position's sigma (centred, / sigma, * gamma), LN1's beta a new
//     component, all of them through LN2 frozen likewise, the feed-forward the remainder
//     x' - beta2 - (the rest), LN2's beta a component;
//   pre-norm: x' = x + attn + FF(LN2(x + attn)), the feed-forward the remainder x' - x - attn.
// The remainders make the components sum to the engine's x_l(p) exactly (up to double
// rounding). A key in the memory is the cached x_l of an earlier segment's position: the same
// walk at that position splits it into the same named components, as they ran in that
// position's own segment. LN2's sigma needs w = y + FF(y), so FF runs once more on the CPU
// backend from y recomputed in double (the run's y up to float rounding).
#include "core/analysis/qk_decomposition_xl.h"

#include <cmath>
#include <map>
#include <memory>

#include "core/analysis/residual_components.h"
#include "core/model/embeddings.h"
#include "core/backend/backend.h"
#include "core/formats/packed_weights.h"
#include "core/model/attention_map.h"
#include "core/model/forward_pass.h"
#include "core/model/positional.h"
#include "core/tensor/error.h"
#include "core/variants/transformer_xl/transformer_xl.h"

namespace atlas {

namespace {

using XlqkVec = std::vector<double>;

// A norm with its divisor left out: centring (LayerNorm), the gain, the shift (LayerNorm's beta).
struct XlqkNorm {
  XlqkVec gain, shift;
  bool centre = false, has_shift = false;
};

XlqkNorm xlqk_norm(const ModelConfig& c, const ParamStore& p, const std::string& name) {
  XlqkNorm n;
  const int64_t d = c.d_model;
  n.gain = c.norm == NormKind::ScaleNorm ? XlqkVec(size_t(d), residual_param_vector(p.at(name + ".g"))[0])
                                         : residual_param_vector(p.at(name + ".gamma"));
  n.centre = n.has_shift = c.norm == NormKind::LayerNorm;
  n.shift = n.has_shift ? residual_param_vector(p.at(name + ".beta")) : XlqkVec(size_t(d), 0.0);
  return n;
}

// The divisor the config's norm applies to z: sigma (LayerNorm), rms (RMSNorm), |z| (ScaleNorm).
double xlqk_divisor(const ModelConfig& c, const XlqkVec& z) {
  double sum = 0, sq = 0;
  for (double v : z) sum += v, sq += v * v;
  const double n = double(z.size());
  if (c.norm == NormKind::LayerNorm) {
    const double mean = sum / n;
    double var = 0;
    for (double v : z) var += (v - mean) * (v - mean);
    return std::sqrt(var / n + double(c.norm_eps));
  }
  if (c.norm == NormKind::RmsNorm) return std::sqrt(sq / n + double(c.norm_eps));
  return std::max(std::sqrt(sq), double(c.norm_eps));
}

// z through the norm frozen at `divisor`, without the shift: linear in z.
void xlqk_freeze(const XlqkNorm& n, double divisor, XlqkVec& z) {
  double mean = 0;
  if (n.centre) {
    for (double v : z) mean += v;
    mean /= double(z.size());
  }
  for (size_t k = 0; k < z.size(); ++k) z[k] = (z[k] - mean) * n.gain[k] / divisor;
}

XlqkVec xlqk_row(const std::vector<float>& t, int64_t row, int64_t cols) {
  return XlqkVec(t.begin() + row * cols, t.begin() + (row + 1) * cols);
}

// The run's activations by input position, and the parameters the walk reads.
struct XlqkStream {
  explicit XlqkStream(const ModelConfig& config) : c(config) {}
  const ModelConfig& c;
  int64_t layer = 0;  // the decomposed head's layer
  bool post = true;
  std::vector<std::vector<float>> heads;   // per layer [L, H*dh]
  std::vector<std::vector<float>> input;   // per layer 0..layer [L, d]: x_l
  std::vector<Tensor> wo;                  // per earlier layer [d, H*dh]
  std::vector<XlqkVec> bo;                 // per earlier layer [d]
  std::vector<bool> has_bo;
  std::vector<XlqkNorm> attn_norm, ffn_norm;          // per layer 0..layer
  std::vector<std::vector<double>> sigma1, sigma2;    // post-norm: per earlier layer, per position
};

std::vector<std::string> xlqk_component_names(const XlqkStream& s) {
  std::vector<std::string> names = {"embed.tokens"};
  for (int64_t l = 0; l < s.layer; ++l) {
    const std::string pre = "layer" + std::to_string(l);
    for (int64_t h = 0; h < s.c.n_heads; ++h) names.push_back(pre + ".head" + std::to_string(h));
    if (s.has_bo[size_t(l)]) names.push_back(pre + ".attn_bias");
    if (s.post && s.attn_norm[size_t(l)].has_shift) names.push_back(pre + ".self_attn_norm.beta");
    names.push_back(pre + ".mlp");
    if (s.post && s.ffn_norm[size_t(l)].has_shift) names.push_back(pre + ".ffn_norm.beta");
  }
  return names;
}

// Layer l's attention output at position p as one vector per head (then b_O when present).
std::vector<XlqkVec> xlqk_attention_parts(const XlqkStream& s, int64_t l, int64_t p) {
  const int64_t d = s.c.d_model, H = s.c.n_heads, dh = s.c.d_head(), width = H * dh;
  const float* o = s.heads[size_t(l)].data() + p * width;
  const Tensor& wo = s.wo[size_t(l)];
  std::vector<XlqkVec> parts;
  for (int64_t h = 0; h < H; ++h) {
    XlqkVec x(size_t(d), 0.0);
    for (int64_t k = 0; k < d; ++k)
      for (int64_t m = h * dh; m < (h + 1) * dh; ++m) x[size_t(k)] += double(wo.data[size_t(k * width + m)]) * o[m];
    parts.push_back(std::move(x));
  }
  if (s.has_bo[size_t(l)]) parts.push_back(s.bo[size_t(l)]);
  return parts;
}

// x_layer(p) split into xlqk_component_names' components (the walk of the file's comment).
std::vector<XlqkVec> xlqk_components(const XlqkStream& s, int64_t p) {
  const int64_t d = s.c.d_model;
  std::vector<XlqkVec> comps = {xlqk_row(s.input[0], p, d)};
  for (int64_t l = 0; l < s.layer; ++l) {
    std::vector<XlqkVec> attn = xlqk_attention_parts(s, l, p);
    const XlqkVec next = xlqk_row(s.input[size_t(l) + 1], p, d);
    XlqkVec mlp = next;
    if (s.post) {
      for (XlqkVec& a : attn) comps.push_back(std::move(a));
      for (XlqkVec& v : comps) xlqk_freeze(s.attn_norm[size_t(l)], s.sigma1[size_t(l)][size_t(p)], v);
      if (s.attn_norm[size_t(l)].has_shift) comps.push_back(s.attn_norm[size_t(l)].shift);
      for (XlqkVec& v : comps) xlqk_freeze(s.ffn_norm[size_t(l)], s.sigma2[size_t(l)][size_t(p)], v);
      for (const XlqkVec& v : comps)
        for (int64_t k = 0; k < d; ++k) mlp[size_t(k)] -= v[size_t(k)];
      for (int64_t k = 0; k < d; ++k) mlp[size_t(k)] -= s.ffn_norm[size_t(l)].shift[size_t(k)];
      comps.push_back(std::move(mlp));
      if (s.ffn_norm[size_t(l)].has_shift) comps.push_back(s.ffn_norm[size_t(l)].shift);
    } else {
      const XlqkVec x = xlqk_row(s.input[size_t(l)], p, d);
      for (int64_t k = 0; k < d; ++k) mlp[size_t(k)] -= x[size_t(k)];
      for (XlqkVec& a : attn) {
        for (int64_t k = 0; k < d; ++k) mlp[size_t(k)] -= a[size_t(k)];
        comps.push_back(std::move(a));
      }
      comps.push_back(std::move(mlp));
    }
  }
  return comps;
}

// Post-norm: each earlier layer's frozen divisors per position, sigma1 of z = x + attn and
// sigma2 of w = y + FF(y) with y = LN1(z), FF run on the CPU backend as the engine's
// feed_forward (core/model/transformer_block.h) runs it.
void xlqk_post_norm_divisors(XlqkStream& s, const ParamStore& p, int64_t L) {
  const ModelConfig& c = s.c;
  const int64_t d = c.d_model;
  std::unique_ptr<Backend> be = make_cpu_backend();
  auto optional = [&](const std::string& name) { return p.count(name) ? be->upload(to_float(p.at(name))) : DTensor{}; };
  const Activation act = c.activation == FfnActivation::ReLU       ? Activation::ReLU
                         : c.activation == FfnActivation::Gelu     ? Activation::GeluErf
                         : c.activation == FfnActivation::GeluTanh ? Activation::GeluTanh
                                                                   : Activation::Silu;
  for (int64_t l = 0; l < s.layer; ++l) {
    std::vector<double> sig1(static_cast<size_t>(L)), sig2(static_cast<size_t>(L));
    Tensor y({L, d});
    for (int64_t q = 0; q < L; ++q) {
      XlqkVec z = xlqk_row(s.input[size_t(l)], q, d);
      for (const XlqkVec& a : xlqk_attention_parts(s, l, q))
        for (int64_t k = 0; k < d; ++k) z[size_t(k)] += a[size_t(k)];
      sig1[size_t(q)] = xlqk_divisor(c, z);
      xlqk_freeze(s.attn_norm[size_t(l)], sig1[size_t(q)], z);
      for (int64_t k = 0; k < d; ++k) y.data[size_t(q * d + k)] = float(z[size_t(k)] + s.attn_norm[size_t(l)].shift[size_t(k)]);
    }
    const std::string f = "decoder.layer" + std::to_string(l) + ".ffn";
    const DTensor yd = be->upload(y);
    DTensor h = be->activation(be->linear(yd, be->upload_weight(p.at(f + ".w1")), optional(f + ".b1")), act);
    if (c.ffn.gated) h = be->mul(h, be->linear(yd, be->upload_weight(p.at(f + ".w3")), optional(f + ".b3")));
    const Tensor ff = be->download(be->linear(h, be->upload_weight(p.at(f + ".w2")), optional(f + ".b2")));
    for (int64_t q = 0; q < L; ++q) {
      XlqkVec w(static_cast<size_t>(d));
      for (int64_t k = 0; k < d; ++k) w[size_t(k)] = double(y.data[size_t(q * d + k)]) + ff.data[size_t(q * d + k)];
      sig2[size_t(q)] = xlqk_divisor(c, w);
    }
    s.sigma1.push_back(std::move(sig1));
    s.sigma2.push_back(std::move(sig2));
  }
}

// Rows r0 .. r0 + n - 1 of a [rows, d] weight, dotted with y.
XlqkVec xlqk_project(const Tensor& w, int64_t r0, int64_t n, const XlqkVec& y) {
  XlqkVec out(size_t(n), 0.0);
  for (int64_t r = 0; r < n; ++r) {
    const XlqkVec row = residual_weight_row(w, r0 + r);
    for (size_t k = 0; k < y.size(); ++k) out[size_t(r)] += row[k] * y[k];
  }
  return out;
}

double xlqk_dot(const XlqkVec& a, const XlqkVec& b) {
  double s = 0;
  for (size_t k = 0; k < a.size(); ++k) s += a[k] * b[k];
  return s;
}

}  // namespace

std::string qk_xl_refusal(const ModelConfig& c) {
  if (c.gating())
    return "GTrXL's gates multiply the stream by sigmoids of the stream and the sub-layer output (the GRU gate's "
           "r and z, the input, output and highway gates' sigma(W_g x)), so a layer's input is not a linear sum "
           "of the earlier components even with the norms frozen";
  return "";
}

QkDecomposition qk_decomposition_xl(const Model& model, const std::vector<TokenInfo>& source,
                                    const QkRequest& request, RunOptions options) {
  const ModelConfig& c = model.config();
  const ParamStore& p = model.params();
  const XLConfig& xl = *c.xl();
  const int64_t L = int64_t(source.size()), H = c.n_heads, dh = c.d_head(), d = c.d_model, width = H * dh;
  const int64_t h = request.head, i = request.query, j = request.key, layer = request.layer;
  const int64_t seg = i / xl.segment_length, start = seg * xl.segment_length;
  const int64_t lq = std::min(xl.segment_length, L - start), mem_rows = std::min(xl.mem_len, start);
  const int64_t first_key = start - mem_rows, lk = mem_rows + lq;
  if (j < first_key)
    throw AtlasError("key " + std::to_string(j) + " is before the keys query " + std::to_string(i) + " sees: it is in segment " +
                     std::to_string(seg) + " (tokens " + std::to_string(start) + " to " + std::to_string(start + lq - 1) +
                     ") whose memory holds " + std::to_string(mem_rows) + " earlier tokens (mem_len " +
                     std::to_string(xl.mem_len) + "), so its keys are tokens " + std::to_string(first_key) + " to " +
                     std::to_string(i));

  // The run: heads before W^O through the hook (every segment in order), hidden states traced.
  options.trace = TraceOptions::none();
  options.trace.attention = true;
  options.trace.scores = true;
  options.trace.hidden = true;
  options.trace.maps = MapStorage::Stored;
  options.prefix_cache = nullptr;
  std::map<std::string, int64_t> layer_of;
  for (int64_t l = 0; l < c.n_layers; ++l) layer_of["decoder.layer" + std::to_string(l) + ".self_attn"] = l;
  XlqkStream s(c);
  s.layer = layer;
  s.post = c.norm_position == NormPosition::Post;
  s.heads.assign(size_t(c.n_layers), {});
  options.hooks.heads = [&](const std::string& prefix, Tensor& heads) {
    if (auto it = layer_of.find(prefix); it != layer_of.end())
      s.heads[size_t(it->second)].insert(s.heads[size_t(it->second)].end(), heads.data.begin(), heads.data.end());
  };
  const RunResult run = model.forward(source, {}, options);

  AttentionMap site = attention_site("decoder", "self_attn", layer);
  site.segment = seg;
  const std::string prefix = attention_array_name(site);
  const TracedArray* probs = run.trace.find(prefix);
  const TracedArray* scores = run.trace.find(companion_array_name(prefix, Companion::Scores));
  if (!probs || !scores || scores->tensor.shape != Shape{H, lq, lk} || probs->tensor.shape != Shape{H, lq, lk})
    throw AtlasError("internal: " + prefix + " was not traced as probabilities and scores [heads, " + std::to_string(lq) +
                     ", " + std::to_string(lk) + "]");
  const int64_t qi = i - start, kj = j - first_key;
  const double traced = scores->tensor.data[size_t((h * lq + qi) * lk + kj)];
  if (!std::isfinite(traced))
    throw AtlasError("the mask forbids key " + std::to_string(j) + " for query " + std::to_string(i) +
                     " in this head (its score is -inf; same_length keeps the last mem_len keys): there is no score to "
                     "decompose");

  // x_0 as the engine embeds it, then x_1 .. x_layer from the traced hidden states.
  {
    std::unique_ptr<Backend> be = make_cpu_backend();
    DTensor table = be->upload_weight(p.at("embed.tokens"));
    if (c.fixnorm) table = be->row_normalize(table, 1e-5f);
    std::vector<int32_t> ids;
    for (const TokenInfo& t : source) ids.push_back(t.id);
    const Tensor x0 = be->download(be->embedding(table, ids, token_scale(c)));
    s.input.push_back(std::vector<float>(x0.data.begin(), x0.data.end()));
  }
  for (int64_t l = 0; l < layer; ++l) {
    std::vector<float> rows;
    for (int64_t g = 0; g < xl_segments(c, L); ++g) {
      const std::string name = "decoder.seg" + std::to_string(g) + ".layer" + std::to_string(l) + ".hidden";
      const TracedArray* t = run.trace.find(name);
      if (!t) throw AtlasError("internal: " + name + " was not traced");
      rows.insert(rows.end(), t->tensor.data.begin(), t->tensor.data.end());
    }
    s.input.push_back(std::move(rows));
  }
  for (int64_t l = 0; l <= layer; ++l) {
    if (int64_t(s.heads[size_t(l)].size()) != L * width || int64_t(s.input[size_t(l)].size()) != L * d)
      throw AtlasError("internal: layer " + std::to_string(l) + "'s heads or input were not seen for every position");
    const std::string pre = "decoder.layer" + std::to_string(l);
    s.attn_norm.push_back(xlqk_norm(c, p, pre + ".self_attn_norm"));
    s.ffn_norm.push_back(xlqk_norm(c, p, pre + ".ffn_norm"));
    if (l == layer) break;
    s.wo.push_back(to_float(p.at(pre + ".self_attn.wo")));
    s.has_bo.push_back(p.count(pre + ".self_attn.bo") > 0);
    s.bo.push_back(residual_optional_vector(p, pre + ".self_attn.bo", d));
  }
  if (s.post) xlqk_post_norm_divisors(s, p, L);

  // The attention's input at a position, split; pre-norm through its norm frozen there.
  const XlqkNorm& norm = s.attn_norm[size_t(layer)];
  auto divisor_at = [&](int64_t q) { return s.post ? 1.0 : xlqk_divisor(c, xlqk_row(s.input[size_t(layer)], q, d)); };
  auto attention_input = [&](int64_t q) {
    std::vector<XlqkVec> comps = xlqk_components(s, q);
    if (!s.post)
      for (XlqkVec& v : comps) xlqk_freeze(norm, divisor_at(q), v);
    return comps;
  };
  const XlqkVec shift = s.post ? XlqkVec(size_t(d), 0.0) : norm.shift;  // the "bias" part's input
  const std::string a = "decoder.layer" + std::to_string(layer) + ".self_attn";
  auto side = [&](const std::vector<XlqkVec>& comps, double weight, const std::string& w, const std::string& b) {
    std::vector<XlqkVec> parts;
    for (const XlqkVec& v : comps) parts.push_back(xlqk_project(p.at(a + w), h * dh, dh, v));
    XlqkVec bias = xlqk_project(p.at(a + w), h * dh, dh, shift);
    const XlqkVec b0 = residual_optional_vector(p, a + b, width);
    for (int64_t m = 0; m < dh; ++m) bias[size_t(m)] = weight * (bias[size_t(m)] + b0[size_t(h * dh + m)]);
    parts.push_back(std::move(bias));
    return parts;
  };
  const std::vector<XlqkVec> qs = side(attention_input(i), 1.0, ".wq", ".bq");
  const std::vector<XlqkVec> ks = side(attention_input(j), 1.0, ".wk", ".bk");
  const XlqkVec u = residual_weight_row(p.at("xl.u"), h), v = residual_weight_row(p.at("xl.v"), h);
  // W_kR R_{i-j}: R the concatenated sinusoid of the (clamped) distance, as xl_attention_sublayer.
  const int64_t dist = xl_distance(i, j, xl.clamp_len);
  const Tensor r_table = sinusoid_table(dist + 1, d, SinusoidLayout::Concatenated);
  const XlqkVec r_row(r_table.data.begin() + dist * d, r_table.data.begin() + (dist + 1) * d);
  const XlqkVec rk = xlqk_project(p.at(a + ".wr"), h * dh, dh, r_row);

  QkDecomposition r;
  r.layer = layer;
  r.head = r.kv_head = h;
  r.query = i;
  r.key = j;
  r.d_model = d;
  r.score = traced;
  r.segment = seg;
  r.key_in_memory = j < start;
  r.scale = double(1.0f / std::sqrt(float(dh)));  // the engine's factor, rounded to float as it is
  r.query_norm_scale = divisor_at(i);
  r.key_norm_scale = divisor_at(j);
  r.rows = xlqk_component_names(s);
  r.rows.push_back("bias");
  r.columns = r.rows;
  r.rows.push_back("xl.u (global content bias)");
  r.rows.push_back("xl.v (global position bias)");
  r.columns.push_back("xl.relative_position");
  const size_t R = r.rows.size(), C = r.columns.size(), n = qs.size();
  r.cells.assign(R * C, 0.0);
  for (size_t x = 0; x < n; ++x) {
    for (size_t y = 0; y < n; ++y) r.cells[x * C + y] = r.scale * xlqk_dot(qs[x], ks[y]);  // (a)
    r.cells[x * C + n] = r.scale * xlqk_dot(qs[x], rk);                                    // (b)
  }
  for (size_t y = 0; y < n; ++y) r.cells[n * C + y] = r.scale * xlqk_dot(u, ks[y]);  // (c)
  r.cells[(n + 1) * C + n] = r.scale * xlqk_dot(v, rk);                               // (d)
  for (double cell : r.cells) r.total += cell;

  if (request.value) {  // o_h(i) = sum_j a_ij (W_V x_j + b_V): no relative term on values in XL
    std::vector<XlqkVec> mixed;
    double a_total = 0;
    for (int64_t k = 0; k < lk; ++k) {
      const double w = probs->tensor.data[size_t((h * lq + qi) * lk + k)];
      if (w == 0.0) continue;
      a_total += w;
      const std::vector<XlqkVec> comps = attention_input(first_key + k);
      if (mixed.empty()) mixed.assign(comps.size(), XlqkVec(size_t(d), 0.0));
      for (size_t t = 0; t < comps.size(); ++t)
        for (int64_t e = 0; e < d; ++e) mixed[t][size_t(e)] += w * comps[t][size_t(e)];
    }
    const std::vector<XlqkVec> vs = side(mixed, a_total, ".wv", ".bv");
    r.value_names.assign(r.columns.begin(), r.columns.begin() + std::ptrdiff_t(n));
    const Tensor wo = to_float(p.at(a + ".wo"));  // [d, H*dh]
    auto through_wo = [&](const double* o) {
      XlqkVec x(size_t(d), 0.0);
      for (int64_t k = 0; k < d; ++k)
        for (int64_t m = 0; m < dh; ++m) x[size_t(k)] += double(wo.data[size_t(k * width + h * dh + m)]) * o[m];
      return x;
    };
    const XlqkVec run_o = xlqk_row(s.heads[size_t(layer)], i, width);
    r.head_output = through_wo(run_o.data() + h * dh);
    const double out_norm = std::sqrt(xlqk_dot(r.head_output, r.head_output));
    for (const XlqkVec& part : vs) {
      const XlqkVec x = through_wo(part.data());
      r.value_projection.push_back(out_norm > 0 ? xlqk_dot(x, r.head_output) / out_norm : 0.0);
      r.value_parts.insert(r.value_parts.end(), x.begin(), x.end());
    }
  }
  return r;
}

}  // namespace atlas
