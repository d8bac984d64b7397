// Direct logit attribution through a frozen final norm (docs/causal.md). With x = x_final at
// position i (the last layer's output, before the stack's final norm) and w = w_U[t] (minus
// w_U[t'] for a difference), the logit is linear in x once the norm's divisor s is frozen:
//   LayerNorm  y = (x - mean(x)) / s * g + b, s = sqrt(var(x) + eps):
//              logit = x . e + b . w + b_out,   e = (g*w - mean(g*w)) / s
//              (centring moves from x to the direction: (x - mean x) . gw = x . (gw - mean gw))
//   RMSNorm    y = x / s * g, s = sqrt(mean(x^2) + eps):   e = g*w / s
//   ScaleNorm  y = g x / s, s = max(|x|, eps):             e = g w / s
// and x is the sum of the components' outputs (pre-norm residual stream), so each part is
// (component) . e. The activations come from the run's hooks: each attention sub-layer's heads
// o [L, H*dh] before W^O, each layer's input and output; the MLP's part is the remainder
// (output - input) . e - heads - b_O, so the parts telescope to x . e exactly.
#include "core/analysis/logit_attribution.h"

#include "core/analysis/residual_components.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/formats/packed_weights.h"
#include "core/model/attention_mechanism.h"
#include "core/tensor/error.h"

namespace atlas {

namespace {

using DVec = std::vector<double>;

// A norm of the config applied to one row in double (for the values of the per-source split).
DVec dla_norm_row(const ModelConfig& c, const ParamStore& p, const std::string& prefix,
                  const Tensor& x, int64_t i) {
  const int64_t d = x.shape[1];
  const double s = residual_norm_scale(c, x, i);
  DVec y(static_cast<size_t>(d));
  double mean = 0;
  if (c.norm == NormKind::LayerNorm) {
    for (int64_t k = 0; k < d; ++k) mean += x.data[size_t(i * d + k)];
    mean /= double(d);
  }
  if (c.norm == NormKind::ScaleNorm) {
    const double g = residual_param_vector(p.at(prefix + ".g"))[0];
    for (int64_t k = 0; k < d; ++k) y[size_t(k)] = g * x.data[size_t(i * d + k)] / s;
    return y;
  }
  const DVec g = residual_param_vector(p.at(prefix + ".gamma"));
  const DVec b = c.norm == NormKind::LayerNorm ? residual_param_vector(p.at(prefix + ".beta")) : DVec(size_t(d), 0.0);
  for (int64_t k = 0; k < d; ++k) y[size_t(k)] = (x.data[size_t(i * d + k)] - mean) / s * g[size_t(k)] + b[size_t(k)];
  return y;
}

// The output matrix's row for token t (unit length with FixNorm, as the forward normalises it).
DVec dla_unembedding(const ModelConfig& c, const ParamStore& p, int64_t t) {
  DVec w = residual_weight_row(p.at(c.output == OutputHead::Tied ? "embed.tokens" : "output.weight"), t);
  if (c.fixnorm) {
    double n = 0;
    for (double v : w) n += v * v;
    n = std::max(std::sqrt(n), 1e-5);
    for (double& v : w) v /= n;
  }
  return w;
}

void check_dla_request(const ModelConfig& c, int64_t L, const DlaRequest& r) {
  for (int64_t p : r.positions)
    if (p < 0 || p >= L)
      throw AtlasError("position " + std::to_string(p) + " is outside the input's " + std::to_string(L) +
                       " tokens (0 to " + std::to_string(L - 1) + ")");
  for (int64_t t : {r.token, r.against})
    if (t >= c.vocab_size || t < -1)
      throw AtlasError("token id " + std::to_string(t) + " is outside the vocabulary (0 to " +
                       std::to_string(c.vocab_size - 1) + ")");
  if (r.against >= 0 && r.token < 0)
    throw AtlasError("a logit difference needs both tokens: the token and the one subtracted from it");
  if (r.per_source) {
    if (const AttentionMechanismModule* m = attention_mechanism(c, true))
      throw AtlasError(std::string("the per-source split needs plain softmax attention (a_ij v_j); this model's "
                                   "self-attention is computed by the \"") + m->name + "\" mechanism");
    const int64_t P = r.positions.empty() ? L : int64_t(r.positions.size());
    const double cells = double(c.n_layers) * double(c.n_heads) * double(P) * double(L);
    if (cells > double(int64_t{1} << 25))
      throw AtlasError("the per-source split of " + std::to_string(P) + " positions would hold " +
                       std::to_string(int64_t(cells)) + " values (layers x heads x positions x keys), more than " +
                       std::to_string(int64_t{1} << 25) + "; choose a position");
  }
}

}  // namespace

std::string logit_attribution_refusal(const ModelConfig& c) {
  const std::string supported =
      "; supported: pre-norm decoder-only or encoder-only models of standard layers (GPT-2, the Llama family, "
      "tiny-decoder, tiny-llama, ViT)";
  if (c.architecture == Architecture::EncoderDecoder)
    return "an encoder-decoder model's decoder stream also carries cross-attention over the encoder's output, "
           "which this attribution does not split" + supported;
  if (!c.standard_stack())
    return "this model's stack is not made of standard layers (Transformer-XL, Universal Transformer, "
           "reversible, recurrent, ...): its layers are not seen by the layer hooks" + supported;
  if (c.norm_position != NormPosition::Pre)
    return "a post-norm model normalises the stream after every residual sum, so the final state is not a sum "
           "of the components' outputs and no part of the logit belongs to one of them" + supported;
  if (c.output == OutputHead::None) return "the model has no output head (no logits to attribute)" + supported;
  if (c.head.transform)
    return "the output head's transform (dense, activation, norm: BERT's MLM head) is not linear after the "
           "final norm" + supported;
  return "";
}

LogitAttribution logit_attribution(const Model& model, const std::vector<TokenInfo>& source,
                                   const DlaRequest& request, RunOptions options) {
  const ModelConfig& c = model.config();
  const ParamStore& p = model.params();
  if (const std::string why = logit_attribution_refusal(c); !why.empty())
    throw AtlasError("direct logit attribution: " + why);
  const int64_t L = int64_t(source.size());
  check_dla_request(c, L, request);
  const int64_t H = c.n_heads, dh = c.d_head(), d = c.d_model;

  options.trace = TraceOptions::none();
  options.trace.attention = request.per_source;
  options.trace.maps = MapStorage::Stored;
  ResidualCapture cap;
  const RunResult run = run_capturing_residual(model, source, options, cap);
  const std::string& stack = cap.stack;
  const std::string& sub = cap.sub;
  const int64_t layers = cap.layers;
  if (!run.is_logits) throw AtlasError("internal: the run returned no logits");
  const int64_t V = run.output.shape[1];

  LogitAttribution r;
  r.layers = layers;
  r.heads = H;
  r.keys = L;
  r.against = request.against;
  r.positions = request.positions;
  if (r.positions.empty())
    for (int64_t i = 0; i < L; ++i) r.positions.push_back(i);
  const int64_t P = int64_t(r.positions.size());
  for (auto* v : {&r.embed_tokens, &r.embed_positions, &r.norm_bias, &r.output_bias, &r.total, &r.logit,
                  &r.norm_scale})
    v->assign(size_t(P), 0.0);
  r.head.assign(size_t(P * layers * H), 0.0);
  r.attn_bias.assign(size_t(P * layers), 0.0);
  r.mlp.assign(size_t(P * layers), 0.0);
  if (request.per_source) r.per_source.assign(size_t(layers * H * P * L), 0.0);

  const Tensor& x_final = cap.output.back();  // [L, d] before the final norm
  const Tensor positions = residual_position_rows(c, p, L);
  const std::string final_norm = stack + ".final_norm";
  const DVec gain = c.norm == NormKind::ScaleNorm ? DVec(size_t(d), residual_param_vector(p.at(final_norm + ".g"))[0])
                                                  : residual_param_vector(p.at(final_norm + ".gamma"));
  const DVec shift = c.norm == NormKind::LayerNorm ? residual_param_vector(p.at(final_norm + ".beta")) : DVec(size_t(d), 0.0);
  const DVec out_bias = residual_optional_vector(p, "output.bias", c.vocab_size);

  // The direction e of every position (one per position: its own scale, maybe its own token).
  std::vector<DVec> dir(static_cast<size_t>(P));
  for (int64_t q = 0; q < P; ++q) {
    const int64_t i = r.positions[size_t(q)];
    int64_t t = request.token;
    if (t < 0) {  // the run's argmax, lowest id on ties
      t = 0;
      for (int64_t v = 1; v < V; ++v)
        if (run.output.data[size_t(i * V + v)] > run.output.data[size_t(i * V + t)]) t = v;
    }
    r.tokens.push_back(t);
    DVec w = dla_unembedding(c, p, t);
    double logit = run.output.data[size_t(i * V + t)], bias = out_bias[size_t(t)];
    if (request.against >= 0) {
      const DVec w2 = dla_unembedding(c, p, request.against);
      for (int64_t k = 0; k < d; ++k) w[size_t(k)] -= w2[size_t(k)];
      logit -= run.output.data[size_t(i * V + request.against)];
      bias -= out_bias[size_t(request.against)];
    }
    const double s = residual_norm_scale(c, x_final, i);
    DVec e(static_cast<size_t>(d));
    double mean_gw = 0, beta_w = 0;
    for (int64_t k = 0; k < d; ++k) {
      e[size_t(k)] = gain[size_t(k)] * w[size_t(k)];
      mean_gw += e[size_t(k)];
      beta_w += shift[size_t(k)] * w[size_t(k)];
    }
    mean_gw = c.norm == NormKind::LayerNorm ? mean_gw / double(d) : 0.0;
    for (double& v : e) v = (v - mean_gw) / s;
    dir[size_t(q)] = std::move(e);
    r.norm_scale[size_t(q)] = s;
    r.logit[size_t(q)] = logit;
    r.output_bias[size_t(q)] = bias;
    r.norm_bias[size_t(q)] = beta_w;
    const double pos = residual_dot_row(positions, i, dir[size_t(q)]);
    r.embed_positions[size_t(q)] = pos;
    r.embed_tokens[size_t(q)] = residual_dot_row(cap.input[0], i, dir[size_t(q)]) - pos;
  }

  for (int64_t l = 0; l < layers; ++l) {
    const std::string prefix = stack + ".layer" + std::to_string(l) + "." + sub;
    const Tensor wo = to_float(p.at(prefix + ".wo"));  // [d, H*dh]
    const DVec bo = residual_optional_vector(p, prefix + ".bo", d);
    const Tensor& o = cap.heads[size_t(l)];             // [L, H*dh]
    const int64_t width = H * dh;
    // Per-source: the probabilities [H, L, L] and the values v = norm(x_in) W_V^T + b_V [L, kv*dh].
    const Tensor* probs = nullptr;
    std::vector<DVec> values;
    if (request.per_source) {
      const TracedArray* a = run.trace.find(prefix);
      if (!a || a->tensor.shape != Shape{H, L, L})
        throw AtlasError("internal: " + prefix + " was not traced as dense probabilities [heads, L, L]");
      probs = &a->tensor;
      const Tensor wv = to_float(p.at(prefix + ".wv"));  // [kv*dh, d]
      const int64_t kvw = wv.shape[0];
      const DVec bv = residual_optional_vector(p, prefix + ".bv", kvw);
      const std::string norm_prefix = stack + ".layer" + std::to_string(l) + "." + sub + "_norm";
      for (int64_t j = 0; j < L; ++j) {
        const DVec xn = dla_norm_row(c, p, norm_prefix, cap.input[size_t(l)], j);
        DVec v(static_cast<size_t>(kvw));
        for (int64_t m = 0; m < kvw; ++m) {
          double s = bv[size_t(m)];
          for (int64_t k = 0; k < d; ++k) s += double(wv.data[size_t(m * d + k)]) * xn[size_t(k)];
          v[size_t(m)] = s;
        }
        values.push_back(std::move(v));
      }
    }
    for (int64_t q = 0; q < P; ++q) {
      const int64_t i = r.positions[size_t(q)];
      const DVec& e = dir[size_t(q)];
      DVec u(size_t(width), 0.0);  // W^O^T e
      for (int64_t k = 0; k < d; ++k) {
        const double ek = e[size_t(k)];
        for (int64_t m = 0; m < width; ++m) u[size_t(m)] += double(wo.data[size_t(k * width + m)]) * ek;
      }
      double heads_sum = 0;
      for (int64_t h = 0; h < H; ++h) {
        double s = 0;
        for (int64_t m = h * dh; m < (h + 1) * dh; ++m) s += double(o.data[size_t(i * width + m)]) * u[size_t(m)];
        r.head[size_t((q * layers + l) * H + h)] = s;
        heads_sum += s;
        if (probs) {
          const int64_t kvh = h / (H / c.kv_heads());
          for (int64_t j = 0; j < L; ++j) {
            double vu = 0;
            for (int64_t m = 0; m < dh; ++m) vu += values[size_t(j)][size_t(kvh * dh + m)] * u[size_t(h * dh + m)];
            r.per_source[size_t(((l * H + h) * P + q) * L + j)] = double(probs->data[size_t((h * L + i) * L + j)]) * vu;
          }
        }
      }
      double bias = 0;
      for (int64_t k = 0; k < d; ++k) bias += bo[size_t(k)] * e[size_t(k)];
      r.attn_bias[size_t(q * layers + l)] = bias;
      const double update = residual_dot_row(cap.output[size_t(l)], i, e) - residual_dot_row(cap.input[size_t(l)], i, e);
      r.mlp[size_t(q * layers + l)] = update - heads_sum - bias;
    }
  }
  for (int64_t q = 0; q < P; ++q) {
    double s = r.embed_tokens[size_t(q)] + r.embed_positions[size_t(q)] + r.norm_bias[size_t(q)] +
               r.output_bias[size_t(q)];
    for (int64_t l = 0; l < layers; ++l) {
      s += r.attn_bias[size_t(q * layers + l)] + r.mlp[size_t(q * layers + l)];
      for (int64_t h = 0; h < H; ++h) s += r.head[size_t((q * layers + l) * H + h)];
    }
    r.total[size_t(q)] = s;
  }
  return r;
}

}  // namespace atlas
