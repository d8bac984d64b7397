// Ablation sweeps (ablation_sweep.h). Heads are ablated through RunOptions::hooks.heads on the
// heads' outputs before W^O (zero: the columns of head h set to 0, which multiplies W^O exactly
// as the per-spec ablation's zeroed W^O columns do; mean: set to the head's mean output),
// layers by LayerDrop pruning (zero, ablation.h's ablated_model) or through hooks.layer (mean:
// output = input + the mean residual update of that layer).
#include "core/analysis/ablation_sweep.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/analysis/ablation.h"
#include "core/analysis/choice_and_softmax.h"
#include "core/backend/backend.h"
#include "core/model/stack_kind_module.h"
#include "core/tensor/error.h"

namespace atlas {

namespace {

// The clean run's side of KL(P || Q), computed once per sweep: P per row, and
// sum_v P(v) log P(v). Then KL_i = sum_v P log P - sum_v P x_v + logsumexp(x) for the ablated
// logits x, one exponential per vocabulary entry and cell.
struct CleanDistributions {
  std::vector<double> p;      // [L, V]
  std::vector<double> p_log_p;  // [L]
};

CleanDistributions clean_distributions(const Tensor& logits) {
  const int64_t L = logits.shape[0], n = logits.shape[1];
  CleanDistributions c{std::vector<double>(static_cast<size_t>(L * n)), std::vector<double>(static_cast<size_t>(L))};
#pragma omp parallel for num_threads(cpu_threads()) schedule(static)
  for (int64_t i = 0; i < L; ++i) {
    const std::vector<double> lp = log_softmax_row(logits.data.data() + i * n, n);
    double s = 0;
    for (int64_t v = 0; v < n; ++v) {
      const double p = std::exp(lp[size_t(v)]);
      c.p[size_t(i * n + v)] = p;
      if (p > 0) s += p * lp[size_t(v)];
    }
    c.p_log_p[size_t(i)] = s;
  }
  return c;
}

// (1/L) sum_i KL(P_i || Q_i), Q = softmax of the ablated logits.
double mean_kl(const CleanDistributions& clean, const Tensor& ablated) {
  const int64_t L = ablated.shape[0], n = ablated.shape[1];
  double total = 0;
#pragma omp parallel for num_threads(cpu_threads()) schedule(static) reduction(+ : total)
  for (int64_t i = 0; i < L; ++i) {
    const float* x = ablated.data.data() + i * n;
    const double* p = clean.p.data() + i * n;
    const double mx = *std::max_element(x, x + n);
    double z = 0, px = 0;
    for (int64_t v = 0; v < n; ++v) {
      z += std::exp(double(x[v]) - mx);
      px += p[v] * double(x[v]);
    }
    total += clean.p_log_p[size_t(i)] - px + mx + std::log(z);
  }
  return total / double(L);
}

// Column means of a [rows, cols] activation accumulated over every call of one site.
struct RunningMean {
  std::vector<double> sum;
  int64_t rows = 0;
  void add(const Tensor& t) {
    const int64_t r = t.shape[0], c = t.shape[1];
    if (sum.empty()) sum.assign(size_t(c), 0.0);
    if (int64_t(sum.size()) != c) throw AtlasError("internal: an activation changed width between calls");
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < c; ++j) sum[size_t(j)] += t.data[size_t(i * c + j)];
    rows += r;
  }
  double mean(int64_t j) const { return rows ? sum[size_t(j)] / double(rows) : 0.0; }
};

const std::vector<TokenInfo>& output_tokens(const Model& m, const std::vector<TokenInfo>& source,
                                            const std::vector<TokenInfo>& target) {
  return m.config().architecture == Architecture::EncoderDecoder ? target : source;
}

}  // namespace

const char* sweep_unit_name(SweepUnit u) { return u == SweepUnit::Heads ? "heads" : "layers"; }
const char* ablation_mode_name(AblationMode m) { return m == AblationMode::Zero ? "zero" : "mean"; }
const char* sweep_metric_name(SweepMetric m) {
  switch (m) {
    case SweepMetric::KL: return "kl";
    case SweepMetric::Loss: return "loss";
    case SweepMetric::LogitDiff: return "logit-diff";
    case SweepMetric::Cosine: return "cosine";
  }
  return "?";
}

SweepUnit parse_sweep_unit(const std::string& s, const std::string& flag) {
  return parse_named_choice<SweepUnit>(s, flag, {{"heads", SweepUnit::Heads}, {"layers", SweepUnit::Layers}});
}
AblationMode parse_ablation_mode(const std::string& s, const std::string& flag) {
  return parse_named_choice<AblationMode>(s, flag, {{"zero", AblationMode::Zero}, {"mean", AblationMode::Mean}});
}
SweepMetric parse_sweep_metric(const std::string& s, const std::string& flag) {
  return parse_named_choice<SweepMetric>(s, flag, {{"kl", SweepMetric::KL}, {"loss", SweepMetric::Loss},
                                             {"logit-diff", SweepMetric::LogitDiff}, {"cosine", SweepMetric::Cosine}});
}

int32_t single_token_id(const Model& model, const std::string& text, const std::string& flag) {
  const int64_t vocab = model.config().vocab_size;
  if (text.size() > 1 && text[0] == '#' &&
      std::all_of(text.begin() + 1, text.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
    if (text.size() > 10 || std::stoll(text.substr(1)) >= vocab)
      throw AtlasError(flag + ": token id " + text.substr(1) + " is outside the vocabulary (0.." +
                       std::to_string(vocab - 1) + ")");
    return static_cast<int32_t>(std::stoll(text.substr(1)));
  }
  if (text.empty()) throw AtlasError(flag + ": empty; give a token's text or #ID");
  std::vector<TokenInfo> wrap;
  try {
    wrap = model.tokenizer().encode("");
  } catch (const AtlasError&) {
  }
  std::vector<TokenInfo> got;
  for (const TokenInfo& t : model.tokenizer().encode(text))
    if (std::none_of(wrap.begin(), wrap.end(), [&](const TokenInfo& w) { return w.id == t.id; })) got.push_back(t);
  if (got.size() != 1) {
    std::string list;
    for (const TokenInfo& t : got) list += (list.empty() ? "" : ", ") + ("\"" + t.label + "\"");
    throw AtlasError(flag + ": \"" + text + "\" is " + std::to_string(got.size()) + " tokens (" + list +
                     "), not one; give one token's text or its id as #ID");
  }
  return got.front().id;
}

void check_sweep(const Model& model, const std::vector<TokenInfo>& source,
                 const std::vector<TokenInfo>& target, const SweepSpec& spec) {
  const ModelConfig& c = model.config();
  const bool logits = c.output != OutputHead::None;
  const std::vector<TokenInfo>& rows = output_tokens(model, source, target);
  if (rows.empty()) throw AtlasError("the ablation sweep needs a non-empty input");
  const char* metric = sweep_metric_name(spec.metric);
  if (spec.metric != SweepMetric::Cosine && !logits)
    throw AtlasError(std::string("the metric ") + metric +
                     " needs a model with an output head; this one outputs hidden states: use cosine");
  if (spec.metric == SweepMetric::Cosine && logits)
    throw AtlasError("the metric cosine compares hidden states; this model outputs logits: use kl, loss or logit-diff");
  if (spec.metric == SweepMetric::Loss) {
    if (c.architecture == Architecture::Encoder)
      throw AtlasError("the metric loss is the next-token loss of a causal model; this is an encoder "
                       "(bidirectional): use kl or logit-diff");
    if (rows.size() < 2) throw AtlasError("the metric loss needs at least two tokens (one to predict)");
  }
  if (spec.metric == SweepMetric::LogitDiff) {
    const int64_t vocab = c.vocab_size;
    for (int32_t t : {spec.token_a, spec.token_b})
      if (t < 0 || t >= vocab)
        throw AtlasError("logit-diff: token id " + std::to_string(t) + " is outside the vocabulary (0.." +
                         std::to_string(vocab - 1) + "); give two tokens");
    if (spec.position < -1 || spec.position >= int64_t(rows.size()))
      throw AtlasError("logit-diff: position " + std::to_string(spec.position) + " is outside the " +
                       std::to_string(rows.size()) + " output positions (0.." + std::to_string(rows.size() - 1) +
                       ", or -1 for the last)");
  }
  bool heads = false;  // attention sub-layers with an output projection the hooks act on
  for (const auto& [name, t] : model.params())
    heads |= name.size() > 3 && name.compare(name.size() - 3, 3, ".wo") == 0 && global_layer_of(c, name) >= 0;
  if (!heads)
    throw AtlasError("this model has no multi-head attention layers to ablate (no per-layer output "
                     "projection W^O); the sweep covers the Transformer variants");
  if (spec.unit == SweepUnit::Layers && spec.mode == AblationMode::Mean &&
      !has_layer_stack(c))
    throw AtlasError("mean ablation of whole layers needs a standard layer stack; this model's stack "
                     "(Universal Transformer, Transformer-XL or reversible) has none: use --mode zero, "
                     "or sweep heads");
}

double sweep_metric(const SweepSpec& spec, const RunResult& clean, const RunResult& ablated,
                    const std::vector<TokenInfo>& tokens) {
  const Tensor& a = clean.output;
  const Tensor& b = ablated.output;
  if (a.shape != b.shape) throw AtlasError("internal: ablated output shape differs from the clean run's");
  const int64_t L = a.shape[0], n = a.shape[1];
  auto row = [n](const Tensor& t, int64_t i) { return t.data.data() + i * n; };
  switch (spec.metric) {
    case SweepMetric::KL: return mean_kl(clean_distributions(a), b);
    case SweepMetric::Loss: {
      double total = 0;
#pragma omp parallel for num_threads(cpu_threads()) schedule(static) reduction(+ : total)
      for (int64_t i = 0; i < L - 1; ++i) total -= log_softmax_row(row(b, i), n)[size_t(tokens[size_t(i + 1)].id)];
      return total / double(L - 1);
    }
    case SweepMetric::LogitDiff: {
      const int64_t i = spec.position < 0 ? L - 1 : spec.position;
      return double(row(b, i)[spec.token_a]) - double(row(b, i)[spec.token_b]);
    }
    case SweepMetric::Cosine: {
      double total = 0;
      for (int64_t i = 0; i < L; ++i) {
        double xy = 0, xx = 0, yy = 0;
        for (int64_t k = 0; k < n; ++k) {
          const double x = row(a, i)[k], y = row(b, i)[k];
          xy += x * y;
          xx += x * x;
          yy += y * y;
        }
        total += xy / std::max(std::sqrt(xx * yy), 1e-30);
      }
      return total / double(L);
    }
  }
  return 0;
}

SweepResult ablation_sweep(const Model& model, const std::vector<TokenInfo>& source,
                           const std::vector<TokenInfo>& target, const SweepSpec& spec,
                           const RunOptions& options,
                           const std::function<void(int64_t, int64_t)>& progress, SweepResult* partial) {
  check_sweep(model, source, target, spec);
  const ModelConfig& c = model.config();
  const std::vector<TokenInfo>& rows = output_tokens(model, source, target);
  SweepResult r;
  r.spec = spec;
  r.layers = ablation_layer_count(c);
  r.heads = spec.unit == SweepUnit::Heads ? c.n_heads : 1;
  r.position = spec.metric == SweepMetric::LogitDiff ? (spec.position < 0 ? int64_t(rows.size()) - 1 : spec.position) : -1;
  const int64_t total = 1 + r.layers * r.heads;
  for (int64_t l = 0; l < r.layers; ++l) {
    const bool two_stacks = c.architecture == Architecture::EncoderDecoder && !shared_block_of(c);
    r.row_labels.push_back(!two_stacks     ? "L" + std::to_string(l)
                           : l < c.n_layers ? "E" + std::to_string(l)
                                            : "D" + std::to_string(l - c.n_layers));
  }

  RunOptions base = options;
  base.trace = TraceOptions::none();
  base.prefix_cache = nullptr;
  base.progress = nullptr;
  base.hooks = {};

  // The unablated run, recording the means a mean ablation puts in place of the activation.
  std::map<std::string, RunningMean> head_means, layer_updates;
  RunOptions record = base;
  if (spec.mode == AblationMode::Mean) {
    if (spec.unit == SweepUnit::Heads)
      record.hooks.heads = [&](const std::string& prefix, Tensor& h) { head_means[prefix].add(h); };
    else
      record.hooks.layer = [&](const std::string& layer, const Tensor& in, Tensor& out) {
        Tensor update = out;
        for (size_t k = 0; k < update.data.size(); ++k) update.data[k] -= in.data[k];
        layer_updates[layer].add(update);
      };
  }
  const RunResult clean = model.forward(source, target, record);
  // KL(P || P) = 0 and cos(h, h) = 1 by definition (the formulas would add rounding).
  r.clean = spec.metric == SweepMetric::KL       ? 0.0
            : spec.metric == SweepMetric::Cosine ? 1.0
                                                 : sweep_metric(spec, clean, clean, rows);
  const CleanDistributions reference =
      spec.metric == SweepMetric::KL ? clean_distributions(clean.output) : CleanDistributions{};
  if (progress) progress(1, total);

  r.values.assign(size_t(r.layers * r.heads), std::nan(""));  // a cancel leaves the rest NaN
  try {
    for (int64_t l = 0; l < r.layers; ++l)
      for (int64_t h = 0; h < r.heads; ++h) {
        if (options.cancel && options.cancel->load()) throw Cancelled();
        RunOptions o = base;
        RunResult ablated;
        if (spec.unit == SweepUnit::Heads) {
          o.hooks.heads = [&, l, h](const std::string& prefix, Tensor& t) {
            if (global_layer_of(c, prefix) != l) return;
            const int64_t width = t.shape[1], dh = width / c.n_heads;
            const RunningMean* mean = spec.mode == AblationMode::Mean ? &head_means.at(prefix) : nullptr;
            for (int64_t i = 0; i < t.shape[0]; ++i)
              for (int64_t j = h * dh; j < (h + 1) * dh; ++j)
                t.data[size_t(i * width + j)] = mean ? float(mean->mean(j)) : 0.0f;
          };
          ablated = model.forward(source, target, o);
        } else if (spec.mode == AblationMode::Zero) {
          AblationSpec drop;
          drop.drop_layers = {l};
          try {
            ablated_layers(c, drop);
          } catch (const AtlasError&) {  // the only layer of its stack: nothing would be left to run
            r.values[size_t(l)] = std::nan("");
            if (progress) progress(2 + l, total);
            continue;
          }
          ablated = ablated_model(model, drop).forward(source, target, o);
        } else {
          o.hooks.layer = [&, l](const std::string& layer, const Tensor& in, Tensor& out) {
            if (global_layer_of(c, layer) != l) return;
            const RunningMean& mean = layer_updates.at(layer);
            const int64_t d = out.shape[1];
            for (int64_t i = 0; i < out.shape[0]; ++i)
              for (int64_t j = 0; j < d; ++j)
                out.data[size_t(i * d + j)] = in.data[size_t(i * d + j)] + float(mean.mean(j));
          };
          ablated = model.forward(source, target, o);
        }
        r.values[size_t(l * r.heads + h)] = spec.metric == SweepMetric::KL ? mean_kl(reference, ablated.output)
                                                                         : sweep_metric(spec, clean, ablated, rows);
        if (progress) progress(2 + l * r.heads + h, total);
      }
  } catch (const Cancelled&) {
    if (partial) {
      *partial = r;
      partial->complete = false;
    }
    throw;
  }
  return r;
}

}  // namespace atlas
