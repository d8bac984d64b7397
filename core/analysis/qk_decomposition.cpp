// The QK decomposition of one head's score (qk_decomposition.h, docs/causal.md). Every
// component's vector enters only through weighted sums over positions (one position for a query
// or a key, the pattern's row for the value path), each weight divided by that position's frozen
// norm divisor; a head's sum is formed on its d_head outputs before W^O, so the value path costs
// one projection per component, not one per component and position. The MLP's part is the
// remainder (layer output - input - attention), as in DLA, so the parts telescope to the
// attention's input exactly.
#include "core/analysis/qk_decomposition.h"

#include <cmath>

#include "core/analysis/qk_decomposition_xl.h"
#include "core/analysis/residual_components.h"
#include "core/formats/packed_weights.h"
#include "core/model/attention_mechanism.h"
#include "core/model/attention_map.h"
#include "core/tensor/error.h"
#include "core/variants/alibi/alibi_config.h"
#include "core/variants/alibi/alibi_slopes.h"
#include "core/variants/rotary/rope.h"
#include "core/variants/shaw/shaw.h"

namespace atlas {

namespace {

using QkVec = std::vector<double>;

// What the weighted sums read: the run's activations and the earlier layers' W^O and b_O.
struct QkStream {
  const ModelConfig& c;
  const ParamStore& p;
  const ResidualCapture& cap;
  int64_t layer;          // the decomposed head's layer: components come from layers before it
  bool absolute;          // the embeddings hold absolute positions (a component of their own)
  Tensor positions;       // [L, d] those positions' rows
  std::vector<Tensor> wo;  // per earlier layer [d, H*dh] as float
  std::vector<QkVec> bo;   // per earlier layer [d] (zeros when absent)
  std::vector<bool> has_bo;
};

std::vector<std::string> qk_component_names(const QkStream& s) {
  std::vector<std::string> names = {"embed.tokens"};
  if (s.absolute) names.push_back("embed.positions");
  for (int64_t l = 0; l < s.layer; ++l) {
    const std::string pre = "layer" + std::to_string(l);
    for (int64_t h = 0; h < s.c.n_heads; ++h) names.push_back(pre + ".head" + std::to_string(h));
    if (s.has_bo[size_t(l)]) names.push_back(pre + ".attn_bias");
    names.push_back(pre + ".mlp");
  }
  return names;
}

// sum_p w_p x_c(p) for every component c, in qk_component_names' order.
std::vector<QkVec> qk_weighted_components(const QkStream& s, const QkVec& w) {
  const int64_t d = s.c.d_model, L = int64_t(w.size()), H = s.c.n_heads, dh = s.c.d_head();
  const int64_t width = H * dh;
  auto weighted_rows = [&](const Tensor& t, int64_t cols) {  // sum_p w_p t[p, :]
    QkVec out(size_t(cols), 0.0);
    for (int64_t q = 0; q < L; ++q)
      if (w[size_t(q)] != 0.0)
        for (int64_t k = 0; k < cols; ++k) out[size_t(k)] += w[size_t(q)] * double(t.data[size_t(q * cols + k)]);
    return out;
  };
  double w_total = 0;
  for (double v : w) w_total += v;
  std::vector<QkVec> out;
  QkVec tokens = weighted_rows(s.cap.input[0], d);
  if (s.absolute) {
    QkVec pos = weighted_rows(s.positions, d);
    for (int64_t k = 0; k < d; ++k) tokens[size_t(k)] -= pos[size_t(k)];
    out.push_back(std::move(tokens));
    out.push_back(std::move(pos));
  } else {
    out.push_back(std::move(tokens));
  }
  for (int64_t l = 0; l < s.layer; ++l) {
    const QkVec o = weighted_rows(s.cap.heads[size_t(l)], width);
    const Tensor& wo = s.wo[size_t(l)];
    QkVec attention(size_t(d), 0.0);
    for (int64_t h = 0; h < H; ++h) {
      QkVec x(size_t(d), 0.0);
      for (int64_t k = 0; k < d; ++k) {
        double v = 0;
        for (int64_t m = h * dh; m < (h + 1) * dh; ++m) v += double(wo.data[size_t(k * width + m)]) * o[size_t(m)];
        x[size_t(k)] = v;
        attention[size_t(k)] += v;
      }
      out.push_back(std::move(x));
    }
    QkVec bias(static_cast<size_t>(d));
    for (int64_t k = 0; k < d; ++k) {
      bias[size_t(k)] = w_total * s.bo[size_t(l)][size_t(k)];
      attention[size_t(k)] += bias[size_t(k)];
    }
    if (s.has_bo[size_t(l)]) out.push_back(std::move(bias));
    QkVec mlp = weighted_rows(s.cap.output[size_t(l)], d);
    const QkVec in = weighted_rows(s.cap.input[size_t(l)], d);
    for (int64_t k = 0; k < d; ++k) mlp[size_t(k)] -= in[size_t(k)] + attention[size_t(k)];
    out.push_back(std::move(mlp));
  }
  return out;
}

// The attention norm with its divisor already in the weights: centring (LayerNorm) and the gain.
void qk_apply_frozen_norm(const ModelConfig& c, const QkVec& gain, QkVec& z) {
  if (c.norm == NormKind::LayerNorm) {
    double mean = 0;
    for (double v : z) mean += v;
    mean /= double(z.size());
    for (double& v : z) v -= mean;
  }
  for (size_t k = 0; k < z.size(); ++k) z[k] *= gain[k];
}

// Rows row0 .. row0 + n - 1 of a [rows, d] weight as double.
std::vector<QkVec> qk_weight_rows(const Tensor& t, int64_t row0, int64_t n) {
  std::vector<QkVec> rows;
  for (int64_t r = row0; r < row0 + n; ++r) rows.push_back(residual_weight_row(t, r));
  return rows;
}

QkVec qk_project(const std::vector<QkVec>& rows, const QkVec& y) {  // [n, d] . y -> [n]
  QkVec out(rows.size(), 0.0);
  for (size_t r = 0; r < rows.size(); ++r)
    for (size_t k = 0; k < y.size(); ++k) out[r] += rows[r][k] * y[k];
  return out;
}

// One side of the score: each component's projection (then the bias term) for the weights w
// (raw, before the divisors `scale` of each position), through the frozen norm and rows of
// W (W_Q for a query, W_K for a key, W_V for values) plus `bias` times the weights' sum.
std::vector<QkVec> qk_side(const QkStream& s, const QkVec& w, const std::vector<double>& divisor,
                           const QkVec& gain, const QkVec& shift, const std::vector<QkVec>& rows,
                           const QkVec& bias) {
  QkVec scaled(w.size());
  double w_total = 0;
  for (size_t q = 0; q < w.size(); ++q) {
    scaled[q] = w[q] / divisor[q];
    w_total += w[q];
  }
  std::vector<QkVec> parts;
  for (QkVec& z : qk_weighted_components(s, scaled)) {
    qk_apply_frozen_norm(s.c, gain, z);
    parts.push_back(qk_project(rows, z));
  }
  QkVec b = qk_project(rows, shift);
  for (size_t m = 0; m < b.size(); ++m) b[m] = w_total * (b[m] + bias[m]);
  parts.push_back(std::move(b));
  return parts;
}

void check_qk_request(const ModelConfig& c, int64_t layers, int64_t L, const QkRequest& r) {
  if (L == 0) throw AtlasError("input text is empty: nothing to run");
  if (r.layer < 0 || r.layer >= layers)
    throw AtlasError("layer " + std::to_string(r.layer) + " is outside the model's " + std::to_string(layers) +
                     " layers (0 to " + std::to_string(layers - 1) + ")");
  if (r.head < 0 || r.head >= c.n_heads)
    throw AtlasError("head " + std::to_string(r.head) + " is outside the layer's " + std::to_string(c.n_heads) +
                     " heads (0 to " + std::to_string(c.n_heads - 1) + ")");
  for (auto [what, pos] : {std::pair{"query", r.query}, std::pair{"key", r.key}})
    if (pos < 0 || pos >= L)
      throw AtlasError(std::string(what) + " position " + std::to_string(pos) + " is outside the input's " +
                       std::to_string(L) + " tokens (0 to " + std::to_string(L - 1) + ")");
  if (c.architecture == Architecture::Decoder && r.key > r.query)
    throw AtlasError("key " + std::to_string(r.key) + " is after query " + std::to_string(r.query) +
                     ": a causal model's query attends only to keys at or before it");
}

}  // namespace

std::string qk_decomposition_refusal(const ModelConfig& c) {
  const std::string supported =
      "; supported: pre-norm decoder-only or encoder-only models of standard layers with scaled-dot softmax "
      "attention and absolute, rotary (RoPE), ALiBi or Shaw relative positions (GPT-2, the Llama family, "
      "tiny-decoder, tiny-llama, alibi-lm), and Transformer-XL without gates, pre- or post-norm (tiny-xl, "
      "transformer-xl-base)";
  if (c.architecture == Architecture::EncoderDecoder)
    return "an encoder-decoder model's decoder stream also carries cross-attention over the encoder's output, "
           "which this decomposition does not split" + supported;
  if (c.xl()) {  // its own stack, decomposed by qk_decomposition_xl.cpp
    const std::string why = qk_xl_refusal(c);
    return why.empty() ? why : why + supported;
  }
  if (!c.standard_stack())
    return "this model's stack is not made of standard layers (Universal Transformer, reversible, recurrent, "
           "...): its layers are not seen by the layer hooks" + supported;
  if (c.norm_position != NormPosition::Pre)
    return "a post-norm model normalises the stream after every residual sum, so a layer's input is not a sum "
           "of the earlier components' outputs" + supported;
  if (c.adaptive_span())
    return "the adaptive span's soft mask is not supported" + supported;
  if (const AttentionMechanismModule* m = attention_mechanism(c, true)) {
    const std::string name = m->name;
    if (name != "alibi" && name != "shaw")
      return "self-attention computed by the \"" + name + "\" mechanism is not supported" + supported;
    if (c.shaw() && alibi_of(c)) return "Shaw relative positions together with ALiBi are not supported" + supported;
  }
  return "";
}

QkDecomposition qk_decomposition(const Model& model, const std::vector<TokenInfo>& source,
                                 const QkRequest& request, RunOptions options) {
  const ModelConfig& c = model.config();
  const ParamStore& p = model.params();
  if (const std::string why = qk_decomposition_refusal(c); !why.empty())
    throw AtlasError("QK decomposition: " + why);
  const int64_t L = int64_t(source.size());
  check_qk_request(c, c.has_decoder() ? c.decoder_layers() : c.n_layers, L, request);
  if (c.xl()) return qk_decomposition_xl(model, source, request, std::move(options));
  const int64_t H = c.n_heads, dh = c.d_head(), d = c.d_model;
  const int64_t h = request.head, g = h / (H / c.kv_heads()), i = request.query, j = request.key;

  options.trace = TraceOptions::none();
  options.trace.attention = true;
  options.trace.scores = true;
  options.trace.maps = MapStorage::Stored;
  ResidualCapture cap;
  const RunResult run = run_capturing_residual(model, source, options, cap);
  const std::string prefix = cap.attention_prefix(request.layer);
  const TracedArray* probs = run.trace.find(prefix);
  const TracedArray* scores = run.trace.find(companion_array_name(prefix, Companion::Scores));
  if (!probs || !scores || scores->tensor.shape != Shape{H, L, L} || probs->tensor.shape != Shape{H, L, L})
    throw AtlasError("internal: " + prefix + " was not traced as dense probabilities and scores [heads, L, L]");
  const double traced = scores->tensor.data[size_t((h * L + i) * L + j)];
  if (!std::isfinite(traced))
    throw AtlasError("the mask forbids key " + std::to_string(j) + " for query " + std::to_string(i) +
                     " in this head (its score is -inf): there is no score to decompose");

  QkStream s{c, p, cap, request.layer, false, Tensor(), {}, {}, {}};
  s.absolute = !c.embeddings.norm && (c.positional == Positional::Sinusoidal || c.positional == Positional::Learned);
  s.positions = residual_position_rows(c, p, L);
  for (int64_t l = 0; l < request.layer; ++l) {
    const std::string pre = cap.attention_prefix(l);
    s.wo.push_back(to_float(p.at(pre + ".wo")));
    s.has_bo.push_back(p.count(pre + ".bo") > 0);
    s.bo.push_back(residual_optional_vector(p, pre + ".bo", d));
  }
  const std::string norm = prefix + "_norm";
  const QkVec gain = c.norm == NormKind::ScaleNorm ? QkVec(size_t(d), residual_param_vector(p.at(norm + ".g"))[0])
                                                   : residual_param_vector(p.at(norm + ".gamma"));
  const QkVec shift = c.norm == NormKind::LayerNorm ? residual_param_vector(p.at(norm + ".beta")) : QkVec(size_t(d), 0.0);
  std::vector<double> divisor(static_cast<size_t>(L));
  for (int64_t q = 0; q < L; ++q) divisor[size_t(q)] = residual_norm_scale(c, cap.input[size_t(request.layer)], q);
  auto slice = [](const QkVec& v, int64_t from, int64_t n) { return QkVec(v.begin() + from, v.begin() + from + n); };
  auto one_hot = [L](int64_t at) {
    QkVec w(size_t(L), 0.0);
    w[size_t(at)] = 1.0;
    return w;
  };

  QkDecomposition r;
  r.layer = request.layer;
  r.head = h;
  r.kv_head = g;
  r.query = i;
  r.key = j;
  r.d_model = d;
  r.score = traced;
  r.scale = double(1.0f / std::sqrt(float(dh)));  // the engine's factor, rounded to float as it is
  r.query_norm_scale = divisor[size_t(i)];
  r.key_norm_scale = divisor[size_t(j)];
  std::vector<QkVec> qs = qk_side(s, one_hot(i), divisor, gain, shift, qk_weight_rows(p.at(prefix + ".wq"), h * dh, dh),
                                  slice(residual_optional_vector(p, prefix + ".bq", H * dh), h * dh, dh));
  std::vector<QkVec> ks = qk_side(s, one_hot(j), divisor, gain, shift, qk_weight_rows(p.at(prefix + ".wk"), g * dh, dh),
                                  slice(residual_optional_vector(p, prefix + ".bk", c.kv_heads() * dh), g * dh, dh));
  if (c.positional == Positional::Rotary) {  // rotation by position: linear, so part by part
    const Tensor table = rope_table(rope_frequencies(c, L), 0, L);
    RopeArgs args = rope_args(c);
    args.heads = 1;
    const int64_t r_dims = args.rotary_dims;
    for (QkVec& q : qs) rope_rotate_row(q.data(), table.data.data() + i * r_dims, args, dh);
    for (QkVec& k : ks) rope_rotate_row(k.data(), table.data.data() + j * r_dims, args, dh);
  }
  r.rows = qk_component_names(s);
  r.rows.push_back("bias");
  r.columns = r.rows;
  QkVec shaw_key;  // a^K of the clipped distance, when the model has Shaw's tables
  if (c.shaw()) {
    shaw_key = residual_weight_row(p.at(prefix + ".rel_k"), shaw_index(i, j, L, L, c.shaw()->max_distance));
    r.columns.push_back("shaw.relative_key");
  }
  double alibi = 0;
  if (const AlibiConfig* a = alibi_of(c)) {
    alibi = alibi_bias(alibi_slopes(H, a->bias_max)[size_t(h)], i, j, L, L);
    r.columns.push_back("alibi");
  }
  const size_t R = r.rows.size(), C = r.columns.size();
  r.cells.assign(R * C, 0.0);
  for (size_t a = 0; a < R; ++a) {
    for (size_t b = 0; b < ks.size(); ++b) {
      double dot = 0;
      for (int64_t m = 0; m < dh; ++m) dot += qs[a][size_t(m)] * ks[b][size_t(m)];
      r.cells[a * C + b] = r.scale * dot;
    }
    if (!shaw_key.empty()) {
      double dot = 0;
      for (int64_t m = 0; m < dh; ++m) dot += qs[a][size_t(m)] * shaw_key[size_t(m)];
      r.cells[a * C + ks.size()] = r.scale * dot;
    }
  }
  if (alibi_of(c)) r.cells[(R - 1) * C + (C - 1)] = alibi;  // a constant: the bias row's
  for (double v : r.cells) r.total += v;

  if (request.value) {
    const Tensor& pt = probs->tensor;
    QkVec a(static_cast<size_t>(L));
    for (int64_t q = 0; q < L; ++q) a[size_t(q)] = pt.data[size_t((h * L + i) * L + q)];
    std::vector<QkVec> vs = qk_side(s, a, divisor, gain, shift, qk_weight_rows(p.at(prefix + ".wv"), g * dh, dh),
                                    slice(residual_optional_vector(p, prefix + ".bv", c.kv_heads() * dh), g * dh, dh));
    r.value_names = r.rows;
    if (c.shaw()) {  // sum_j a_ij a^V_{clip(j-i)}
      QkVec term(size_t(dh), 0.0);
      const Tensor& av = p.at(prefix + ".rel_v");
      for (int64_t q = 0; q < L; ++q) {
        const QkVec row = residual_weight_row(av, shaw_index(i, q, L, L, c.shaw()->max_distance));
        for (int64_t m = 0; m < dh; ++m) term[size_t(m)] += a[size_t(q)] * row[size_t(m)];
      }
      vs.push_back(std::move(term));
      r.value_names.push_back("shaw.relative_value");
    }
    const Tensor wo = to_float(p.at(prefix + ".wo"));  // [d, H*dh]
    const int64_t width = H * dh;
    auto through_wo = [&](const float* o_f, const double* o_d) {  // head h's slice -> [d]
      QkVec x(size_t(d), 0.0);
      for (int64_t k = 0; k < d; ++k)
        for (int64_t m = 0; m < dh; ++m)
          x[size_t(k)] += double(wo.data[size_t(k * width + h * dh + m)]) * (o_f ? double(o_f[m]) : o_d[m]);
      return x;
    };
    r.head_output = through_wo(cap.heads[size_t(request.layer)].data.data() + i * width + h * dh, nullptr);
    double norm2 = 0;
    for (double v : r.head_output) norm2 += v * v;
    const double out_norm = std::sqrt(norm2);
    for (const QkVec& v : vs) {
      const QkVec x = through_wo(nullptr, v.data());
      double proj = 0;
      for (int64_t k = 0; k < d; ++k) proj += x[size_t(k)] * r.head_output[size_t(k)];
      r.value_projection.push_back(out_norm > 0 ? proj / out_norm : 0.0);
      r.value_parts.insert(r.value_parts.end(), x.begin(), x.end());
    }
  }
  return r;
}

}  // namespace atlas
