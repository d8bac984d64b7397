// Attribution patching (attribution_patching.h) on the training tape. Each input runs once
// through train::build_forward with the model's weights as float (or double) copies; the nodes
// the sites read are the ones the forward records for this purpose (train::ForwardResult):
//   resid l:  layer l's input (layer 0: the embeddings), gradient at that node;
//   attn l:   the attention sub-layer's output after W^O;
//   mlp l:    output - input - attention output of layer l (pre-norm: the MLP's output), whose
//             gradient is the layer output's (output = input + attention + MLP);
//   head, head-pos: the heads' outputs before W^O, [L, H*dv], head h's columns.
#include "core/analysis/attribution_patching.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>
#include <type_traits>

#include "core/analysis/ablation.h"
#include "core/analysis/choice_and_softmax.h"
#include "core/formats/input_file.h"
#include "core/formats/packed_weights.h"
#include "core/model/memory_budget.h"
#include "core/model/stack_kind_module.h"
#include "core/tensor/error.h"
#include "core/train/train_model.h"

namespace atlas {

struct AttributionWeights {
  bool double_precision = false;
  train::ParamsT<float> f;
  train::ParamsT<double> d;
};

std::shared_ptr<const AttributionWeights> attribution_weights(const Model& model, bool double_precision) {
  auto w = std::make_shared<AttributionWeights>();
  w->double_precision = double_precision;
  if (double_precision) w->d = train::to_train_params<double>(model.params());
  else w->f = train::to_train_params<float>(model.params());
  return w;
}

namespace {

template <class S>
const train::ParamsT<S>& weights_of(const AttributionWeights& w) {
  if constexpr (std::is_same_v<S, float>) return w.f;
  else return w.d;
}

using train::MatT;

// One input through the tape: the site matrices per layer, [L, cols] each, and (after a
// backward) their gradients.
template <class S>
struct TapeSites {
  std::vector<MatT<S>> values, grads;  // per layer
  MatT<S> embeddings;                  // [L, d] the layers' input (integrated gradients)
  std::vector<double> logits_row;      // the measured row's logits
};

template <class S>
MatT<S> site_value(train::Tape<S>& t, const train::ForwardResult<S>& f, PatchSite site, size_t l) {
  switch (site) {
    case PatchSite::Resid: return t.value(f.layer_nodes[l].input);
    case PatchSite::Attn: return t.value(f.attention_output_nodes[l]);
    case PatchSite::Mlp:
      return t.value(f.layer_nodes[l].output) - t.value(f.layer_nodes[l].input) -
             t.value(f.attention_output_nodes[l]);
    default: return t.value(f.attention_nodes[l]);
  }
}

template <class S>
int site_gradient_node(const train::ForwardResult<S>& f, PatchSite site, size_t l) {
  switch (site) {
    case PatchSite::Resid: return f.layer_nodes[l].input;
    case PatchSite::Attn: return f.attention_output_nodes[l];
    case PatchSite::Mlp: return f.layer_nodes[l].output;
    default: return f.attention_nodes[l];
  }
}

// Runs `ids` on a fresh tape; with `backward`, seeds the metric's gradient and runs the backward
// (`clean_row`: the clean run's logits, for KL; null = this run is the clean one). `embeddings`,
// when non-null, replaces the layers' input (integrated gradients).
template <class S>
TapeSites<S> run_tape(const ModelConfig& c, const train::ParamsT<S>& params, const std::vector<int32_t>& ids,
                      const PatchSpec& spec, int64_t layers, bool backward, const std::vector<double>* clean_row,
                      const MatT<S>* embeddings) {
  train::Tape<S> tape;
  tape.freeze_params();
  train::Example ex;
  ex.source = ids;
  train::ForwardEdits<S> edits;
  if (embeddings) edits.embeddings = [embeddings](train::Tape<S>& t, int) { return t.constant(*embeddings); };
  edits.logits_row = spec.position < 0 ? int64_t(ids.size()) - 1 : spec.position;  // the one row measured
  const train::ForwardResult<S> f = train::build_forward<S>(tape, c, params, ex, {}, nullptr, edits);
  if (int64_t(f.layer_nodes.size()) != layers || int64_t(f.attention_nodes.size()) != layers)
    throw AtlasError("internal: attribution patching expected " + std::to_string(layers) + " layers with one "
                     "attention call each, the tape recorded " + std::to_string(f.layer_nodes.size()) +
                     " layers and " + std::to_string(f.attention_nodes.size()) + " attention calls");
  TapeSites<S> r;
  const MatT<S>& logits = tape.value(f.logits);
  const int64_t row = 0;  // the measured row, the only one computed
  r.logits_row.resize(size_t(logits.cols()));
  for (Eigen::Index v = 0; v < logits.cols(); ++v) r.logits_row[size_t(v)] = double(logits(row, v));
  r.embeddings = tape.value(f.layer_nodes[0].input);
  for (int64_t l = 0; l < layers; ++l) r.values.push_back(site_value(tape, f, spec.site, size_t(l)));
  if (!backward) return r;
  MatT<S> seed = MatT<S>::Zero(logits.rows(), logits.cols());
  const std::vector<double> g = patch_metric_gradient(spec, clean_row ? *clean_row : r.logits_row, r.logits_row);
  for (Eigen::Index v = 0; v < logits.cols(); ++v) seed(row, v) = static_cast<S>(g[size_t(v)]);
  train::ParamsT<S> unused;
  tape.backward(f.logits, seed, unused);
  for (int64_t l = 0; l < layers; ++l) r.grads.push_back(tape.grad(site_gradient_node(f, spec.site, size_t(l))));
  return r;
}

double metric_of_row(const PatchSpec& spec, const std::vector<double>& clean_row, const std::vector<double>& row) {
  Tensor clean({1, int64_t(row.size())}), x({1, int64_t(row.size())});
  for (size_t v = 0; v < row.size(); ++v) {
    clean.data[v] = float(clean_row[v]);
    x.data[v] = float(row[v]);
  }
  PatchSpec one = spec;
  one.position = 0;
  return patch_metric(one, clean, x);
}

std::vector<int32_t> ids_of(const std::vector<TokenInfo>& tokens) {
  std::vector<int32_t> ids;
  for (const TokenInfo& t : tokens) ids.push_back(t.id);
  return ids;
}

template <class S>
PatchResult attribution_in(const Model& model, const std::vector<TokenInfo>& clean,
                           const std::vector<TokenInfo>& corrupted, const PatchSpec& spec,
                           const AttributionOptions& options, const std::function<void(int64_t, int64_t)>& progress) {
  const ModelConfig& c = model.config();
  const int64_t L = int64_t(clean.size()), layers = ablation_layer_count(c), H = c.n_heads;
  PatchResult r;
  r.spec = spec;
  r.position = spec.position < 0 ? L - 1 : spec.position;
  r.shape = spec.site == PatchSite::Head      ? std::vector<int64_t>{layers, H}
            : spec.site == PatchSite::HeadPos ? std::vector<int64_t>{layers, H, L}
                                              : std::vector<int64_t>{layers, L};
  const std::shared_ptr<const AttributionWeights> held =
      options.weights ? options.weights : attribution_weights(model, options.double_precision);
  if (held->double_precision != options.double_precision)
    throw AtlasError("internal: attribution weights converted for the other precision");
  const train::ParamsT<S>& params = weights_of<S>(*held);
  const bool denoise = spec.direction == PatchDirection::Denoise;
  const int64_t total = options.ig_steps > 0 ? 2 + options.ig_steps : 2;
  auto step = [&](int64_t done) {
    if (options.cancel && options.cancel->load()) throw Cancelled();
    if (progress) progress(done, total);
  };
  step(0);
  const std::vector<int32_t> clean_ids = ids_of(clean), corrupted_ids = ids_of(corrupted);
  // Both runs' site values come from the tape, one of them with its backward: one source, so
  // a_clean - a_corr is exactly 0 where the runs agree (the rows before the first changed token
  // of a causal model). The float tape's products run on the engine's packed kernel
  // (core/train/frozen_products.h), so its forward costs about one engine forward.
  // The clean run first: KL's gradient needs its distribution.
  const bool clean_backward = !denoise && options.ig_steps == 0;  // noising: the gradient at the clean run
  const TapeSites<S> clean_run = run_tape<S>(c, params, clean_ids, spec, layers, clean_backward, nullptr, nullptr);
  step(1);
  const bool corrupted_backward = denoise && options.ig_steps == 0;
  const TapeSites<S> corrupted_run =
      run_tape<S>(c, params, corrupted_ids, spec, layers, corrupted_backward, &clean_run.logits_row, nullptr);
  step(2);
  r.clean = metric_of_row(spec, clean_run.logits_row, clean_run.logits_row);
  r.corrupted = metric_of_row(spec, clean_run.logits_row, corrupted_run.logits_row);
  r.runs += 2;  // the two runs (one of them with its backward for plain AtP)

  std::vector<MatT<S>> grads = denoise ? corrupted_run.grads : clean_run.grads;
  if (options.ig_steps > 0) {
    grads.assign(size_t(layers), MatT<S>());
    const MatT<S> delta = clean_run.embeddings - corrupted_run.embeddings;
    for (int64_t k = 0; k < options.ig_steps; ++k) {
      const S alpha = static_cast<S>((double(k) + 0.5) / double(options.ig_steps));
      const MatT<S> e = corrupted_run.embeddings + alpha * delta;
      const TapeSites<S> run = run_tape<S>(c, params, corrupted_ids, spec, layers, true, &clean_run.logits_row, &e);
      for (int64_t l = 0; l < layers; ++l)
        grads[size_t(l)] = k == 0 ? run.grads[size_t(l)] : MatT<S>(grads[size_t(l)] + run.grads[size_t(l)]);
      ++r.runs;
      step(3 + k);
    }
    for (MatT<S>& g : grads) g /= static_cast<S>(options.ig_steps);
  }

  // The estimate of each cell: sum over its elements of (source - target) * gradient.
  const double unpatched = denoise ? r.corrupted : r.clean;
  int64_t cells = 1;
  for (int64_t s : r.shape) cells *= s;
  r.raw.assign(size_t(cells), unpatched);
  for (int64_t l = 0; l < layers; ++l) {
    const MatT<S> diff = denoise ? MatT<S>(clean_run.values[size_t(l)] - corrupted_run.values[size_t(l)])
                                 : MatT<S>(corrupted_run.values[size_t(l)] - clean_run.values[size_t(l)]);
    const MatT<S>& g = grads[size_t(l)];
    const Eigen::Index dh = diff.cols() / (H ? H : 1);
    auto dot = [&](Eigen::Index row0, Eigen::Index rows, Eigen::Index col0, Eigen::Index cols) {
      double s = 0;
      for (Eigen::Index i = row0; i < row0 + rows; ++i)
        for (Eigen::Index j = col0; j < col0 + cols; ++j) s += double(diff(i, j)) * double(g(i, j));
      return s;
    };
    for (int64_t a = 0; a < r.shape[1]; ++a) {
      if (spec.site == PatchSite::Head) {
        r.raw[size_t(patch_cell(r, l, a))] += dot(0, diff.rows(), a * dh, dh);
      } else if (spec.site == PatchSite::HeadPos) {
        for (int64_t p = 0; p < L; ++p) r.raw[size_t(patch_cell(r, l, a, p))] += dot(p, 1, a * dh, dh);
      } else {
        r.raw[size_t(patch_cell(r, l, a))] += dot(a, 1, 0, diff.cols());
      }
    }
  }
  const double span = r.clean - r.corrupted;
  r.normalised.resize(r.raw.size());
  for (size_t i = 0; i < r.raw.size(); ++i)
    r.normalised[i] = span != 0 ? (r.raw[i] - r.corrupted) / span + 0.0 : std::numeric_limits<double>::quiet_NaN();
  return r;
}

}  // namespace

AttributionMemory estimate_attribution_memory(const Model& model, int64_t tokens, bool double_precision) {
  const ModelConfig& c = model.config();
  const double bytes = double_precision ? 8.0 : 4.0;
  AttributionMemory m;
  for (const auto& [name, t] : model.params()) m.weights += double(t.numel()) * bytes;
  const double L = double(tokens), d = double(c.d_model), dff = double(c.d_ff) * (c.ffn.gated ? 1.5 : 1.0);
  // Per layer and token the tape keeps about 12 d-wide values (norms, q, k, v, heads, W^O out,
  // residual sums), 4 d_ff-wide ones (W1, activation, W2 input) and one probability per head
  // and key; then the logits. Values of two runs plus the gradients of one: 3 x.
  const double per_run = L * (double(ablation_layer_count(c)) * (12 * d + 4 * dff + double(c.n_heads) * L) +
                               2 * double(c.vocab_size));
  m.activations = 3 * per_run * bytes;
  return m;
}

void check_attribution_patching(const Model& model, const std::vector<TokenInfo>& clean,
                                const std::vector<TokenInfo>& corrupted, const PatchSpec& spec,
                                const AttributionOptions& options) {
  check_patching(model, clean, corrupted, spec);
  if (spec.site == PatchSite::Q || spec.site == PatchSite::K || spec.site == PatchSite::V ||
      spec.site == PatchSite::Pattern)
    throw AtlasError(std::string("attribution patching estimates the resid, attn, mlp, head and head-pos sites; the ") +
                     patch_site_name(spec.site) + " site is patched exactly only (atlas patch --site " +
                     patch_site_name(spec.site) + ")");
  const ModelConfig& c = model.config();
  try {
    train::check_trainable(c);
  } catch (const AtlasError& e) {
    throw AtlasError(std::string("attribution patching needs the model's backward (the training tape): ") + e.what());
  }
  if (!has_layer_stack(c))
    throw AtlasError("attribution patching reads the standard layers' activations on the tape; this model's stack "
                     "(Transformer-XL, Universal Transformer or reversible layers) has none: use atlas patch");
  for (const auto* tokens : {&clean, &corrupted})
    for (const TokenInfo& t : *tokens)
      if (t.type != 0)
        throw AtlasError("attribution patching runs every token as type 0 (segment A); the input has a token of "
                         "type " + std::to_string(t.type));
  if (options.ig_steps < 0 || options.ig_steps > 10000)
    throw AtlasError("the integrated-gradients steps (--ig-steps) must be between 1 and 10000 (0: plain AtP), got " +
                     std::to_string(options.ig_steps));
  const AttributionMemory m = estimate_attribution_memory(model, int64_t(clean.size()), options.double_precision);
  const MemoryRoom room = available_memory();
  const double limit = options.max_memory > 0 ? options.max_memory : kMemoryShare * double(room.bytes);
  const std::string source = options.max_memory > 0 ? "--max-memory" : room.limit;
  if (limit > 0 && m.total() > limit)
    throw AtlasError("attribution patching's backward needs about " + format_bytes(uint64_t(m.total())) + " (" +
                     format_bytes(uint64_t(m.weights)) + " of weights as float" +
                     (options.double_precision ? "64" : "32") + ", quantized matrices dequantized, and " +
                     format_bytes(uint64_t(m.activations)) + " of activations for " + std::to_string(clean.size()) +
                     " tokens); " + format_bytes(uint64_t(limit)) + " may be used (" + source +
                     "). Use a shorter input, a smaller model, or exact patching (atlas patch), which needs no "
                     "float copy of the weights");
}

PatchResult attribution_patching(const Model& model, const std::vector<TokenInfo>& clean,
                                 const std::vector<TokenInfo>& corrupted, const PatchSpec& spec,
                                 const AttributionOptions& options,
                                 const std::function<void(int64_t, int64_t)>& progress) {
  check_attribution_patching(model, clean, corrupted, spec, options);
  return options.double_precision ? attribution_in<double>(model, clean, corrupted, spec, options, progress)
                                  : attribution_in<float>(model, clean, corrupted, spec, options, progress);
}

std::vector<double> patch_metric_gradient(const PatchSpec& spec, const std::vector<double>& clean_row,
                                          const std::vector<double>& row) {
  const size_t n = row.size();
  std::vector<double> g(n, 0.0);
  if (spec.metric == PatchMetric::LogitDiff) {
    g[size_t(spec.token_a)] += 1.0;
    g[size_t(spec.token_b)] -= 1.0;
    return g;
  }
  std::vector<float> as_float(row.begin(), row.end());
  const std::vector<double> lq = log_softmax_row(as_float.data(), int64_t(n));
  for (size_t v = 0; v < n; ++v) g[v] = std::exp(lq[v]);  // p
  switch (spec.metric) {
    case PatchMetric::Prob: {
      const double pa = g[size_t(spec.token_a)];
      for (double& x : g) x = -pa * x;
      g[size_t(spec.token_a)] += pa;
      break;
    }
    case PatchMetric::Loss: g[size_t(spec.token_a)] -= 1.0; break;
    case PatchMetric::KL: {
      std::vector<float> clean_float(clean_row.begin(), clean_row.end());
      const std::vector<double> lp = log_softmax_row(clean_float.data(), int64_t(n));
      for (size_t v = 0; v < n; ++v) g[v] -= std::exp(lp[v]);
      break;
    }
    default: break;
  }
  return g;
}

namespace {
std::vector<double> mean_ranks(const std::vector<double>& x) {
  std::vector<size_t> order(x.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return x[a] < x[b]; });
  std::vector<double> rank(x.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && x[order[j + 1]] == x[order[i]]) ++j;
    for (size_t k = i; k <= j; ++k) rank[order[k]] = 0.5 * double(i + j);
    i = j + 1;
  }
  return rank;
}
}  // namespace

double spearman_rank_correlation(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) throw AtlasError("internal: rank correlation of lists of different lengths");
  const size_t n = a.size();
  if (n < 2) return std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> ra = mean_ranks(a), rb = mean_ranks(b);
  const double mean = 0.5 * double(n - 1);
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < n; ++i) {
    sab += (ra[i] - mean) * (rb[i] - mean);
    saa += (ra[i] - mean) * (ra[i] - mean);
    sbb += (rb[i] - mean) * (rb[i] - mean);
  }
  if (saa == 0 || sbb == 0) return std::numeric_limits<double>::quiet_NaN();
  return sab / std::sqrt(saa * sbb);
}

namespace {
std::vector<int64_t> by_magnitude(const std::vector<double>& x) {
  std::vector<int64_t> order(x.size());
  std::iota(order.begin(), order.end(), int64_t(0));
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return std::fabs(x[size_t(a)]) > std::fabs(x[size_t(b)]); });
  return order;
}
}  // namespace

int64_t top_k_overlap(const std::vector<double>& a, const std::vector<double>& b, int64_t k) {
  const std::vector<int64_t> oa = by_magnitude(a), ob = by_magnitude(b);
  k = std::min<int64_t>(k, int64_t(a.size()));
  std::vector<int64_t> ta(oa.begin(), oa.begin() + k), tb(ob.begin(), ob.begin() + k);
  std::sort(ta.begin(), ta.end());
  std::sort(tb.begin(), tb.end());
  std::vector<int64_t> both;
  std::set_intersection(ta.begin(), ta.end(), tb.begin(), tb.end(), std::back_inserter(both));
  return int64_t(both.size());
}

std::vector<double> patch_effects(const PatchResult& r) {
  const double unpatched = r.spec.direction == PatchDirection::Denoise ? r.corrupted : r.clean;
  std::vector<double> e(r.raw.size());
  for (size_t i = 0; i < e.size(); ++i) e[i] = r.raw[i] - unpatched;
  return e;
}

std::vector<int64_t> cells_by_effect(const PatchResult& r) { return by_magnitude(patch_effects(r)); }

}  // namespace atlas
