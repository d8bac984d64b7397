// Activation patching (patching.h). Each site is set through RunOptions::hooks from a recording
// run of the source input:
//   resid, layer 0: the embeddings of one position are those of the source's token there (an
//     embedding row depends only on its token, type and position), so the run is the target's
//     tokens with that one token swapped, no hook;
//   resid, layer l > 0: hooks.layer sets row p of layer l-1's output (the residual before l);
//   attn: hooks.heads sets row p of every head's output before W^O, which W^O maps row by row to
//     the sub-layer's output at p;
//   mlp (pre-norm): output = input + attention + MLP, so the patched row is
//     in_t + attn_t + (out_s - in_s - attn_s), attn = heads W^O^T + b^O (the biases cancel);
//   head, head-pos: hooks.heads sets head h's columns (every row, or row p), matched to the
//     source's call of the same sub-layer by order (Transformer-XL segments, UT steps).
//   q, k, v: hooks.qkv sets head h's columns of the queries, keys or values; pattern: hooks.pattern
//     sets head h's probabilities [Lq, Lk] (the engine recomputes that head's output from them);
//     matched to the source's call by order as above.
// Encoder-decoder models: each run is a source and a target (Model::forward's two inputs); a
// grid row is one attention sub-layer (encoder self-attention, decoder self-attention, decoder
// cross-attention, in the order the clean run calls them), a hook call matched to its row by
// prefix; resid rows are the encoder's layers, then the decoder's, a decoder row's layer 0
// swapping a target token. A cross-attention head's k and v are its projections of the encoder's output, so
// patching them changes what that head reads of the source and nothing else.
#include "core/analysis/patching.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>

#include "core/analysis/ablation.h"
#include "core/analysis/choice_and_softmax.h"
#include "core/formats/packed_weights.h"
#include "core/model/attention_mechanism.h"
#include "core/model/mechanism_module.h"
#include "core/model/stack_kind_module.h"
#include "core/tensor/error.h"

namespace atlas {

namespace {

bool layer_site(PatchSite s) { return s == PatchSite::Resid || s == PatchSite::Attn || s == PatchSite::Mlp; }
bool input_site(PatchSite s) {
  return s == PatchSite::Q || s == PatchSite::K || s == PatchSite::V || s == PatchSite::Pattern;
}
bool per_head(PatchSite s) { return s == PatchSite::Head || input_site(s); }
bool per_position(PatchSite s) { return !per_head(s); }

// What a run leaves for patching: every heads call (per sub-layer prefix, in call order) and
// every standard layer's input and output.
struct RecordedRun {
  std::map<std::string, std::vector<Tensor>> heads;
  std::vector<std::string> head_order;  // the heads calls' prefixes in the order of their first call
  std::map<std::string, std::pair<Tensor, Tensor>> layers;  // name -> (input, output)
  // Per sub-layer prefix, in call order: q, k, v [L, H*dh] each, and the pattern [H, Lq, Lk]
  // (recorded for the q/k/v/pattern sites only).
  std::map<std::string, std::vector<std::array<Tensor, 3>>> qkv;
  std::map<std::string, std::vector<Tensor>> pattern;
  Tensor logits;
};

RecordedRun record_run(const Model& model, const PatchingInput& input, const RunOptions& base,
                       PatchSite site = PatchSite::Resid) {
  RecordedRun r;
  RunOptions o = base;
  if (site == PatchSite::Pattern)
    o.hooks.pattern = [&r](const std::string& prefix, Tensor& p) { r.pattern[prefix].push_back(p); };
  else if (input_site(site))
    o.hooks.qkv = [&r](const std::string& prefix, Tensor& q, Tensor& k, Tensor& v) {
      r.qkv[prefix].push_back({q, k, v});
    };
  o.hooks.heads = [&r](const std::string& prefix, Tensor& h) {
    auto& calls = r.heads[prefix];
    if (calls.empty()) r.head_order.push_back(prefix);
    calls.push_back(h);
  };
  o.hooks.layer = [&r](const std::string& layer, const Tensor& in, Tensor& out) { r.layers[layer] = {in, out}; };
  r.logits = model.forward(input.source, input.target, o).output;
  return r;
}

const Tensor& source_call(const RecordedRun& s, const std::string& prefix, size_t call, const Tensor& like) {
  const auto it = s.heads.find(prefix);
  if (it == s.heads.end() || call >= it->second.size() || it->second[call].shape != like.shape)
    throw AtlasError("activation patching: the two inputs ran " + prefix +
                     " a different number of times or with different shapes (Transformer-XL segments "
                     "or ACT steps differ); head sites need runs of the same structure");
  return it->second[call];
}

// The grid's rows: layers (global numbering, ablation.h), or on an encoder-decoder model the
// attention sub-layers by prefix (patching.h, PatchResult::row_names).
struct PatchRows {
  bool by_prefix = false;
  std::vector<std::string> names;
  std::vector<int64_t> lengths;  // per row, the query positions its sub-layer runs on (head-pos)
  int64_t of(const ModelConfig& c, const std::string& prefix) const {
    if (!by_prefix) return global_layer_of(c, prefix);
    const auto it = std::find(names.begin(), names.end(), prefix);
    return it == names.end() ? -1 : int64_t(it - names.begin());
  }
};

// The layer's standard-stack name ("decoder.layer3") of a single-stack model.
std::string patch_layer_name(const ModelConfig& c, int64_t l) {
  return std::string(c.architecture == Architecture::Encoder ? "encoder" : "decoder") + ".layer" + std::to_string(l);
}

// The patched output rows of a pre-norm layer whose MLP output is the source's:
// in_t + out_s - in_s + (heads_t - heads_s) W^O^T, [L, d] in double.
Eigen::MatrixXd mlp_patched_rows(const Model& model, const RecordedRun& target, const RecordedRun& source,
                                 const std::string& layer, const std::string& attn_prefix) {
  const auto& [in_t, out_t] = target.layers.at(layer);
  const auto& [in_s, out_s] = source.layers.at(layer);
  (void)out_t;
  const Tensor wo = to_float(required_param(model.params(), attn_prefix + ".wo"));  // [d, H*dh]
  const Tensor& h_t = target.heads.at(attn_prefix).front();  // [L, H*dh]
  const Tensor& h_s = source.heads.at(attn_prefix).front();
  const Eigen::MatrixXd dh = h_t.mat().cast<double>() - h_s.mat().cast<double>();
  return in_t.mat().cast<double>() + out_s.mat().cast<double>() - in_s.mat().cast<double>() +
         dh * wo.mat().cast<double>().transpose();
}

// The attention sub-layer prefix of a standard layer (its self-attention).
std::string self_attention_of(const ModelConfig& c, int64_t l) {
  return patch_layer_name(c, l) + (c.architecture == Architecture::Encoder ? ".attn" : ".self_attn");
}

// The q/k/v/pattern sites need every layer's attention to have called the hook (a mechanism
// kernel or a stack of its own may not).
void check_inputs_recorded(const ModelConfig& c, const RecordedRun& s, PatchSite site, const PatchRows& rows) {
  const int64_t layers = int64_t(rows.names.size());
  std::vector<bool> seen(size_t(layers), false);
  auto mark = [&](const std::string& prefix) {
    const int64_t l = rows.of(c, prefix);
    if (l >= 0 && l < layers) seen[size_t(l)] = true;
  };
  if (site == PatchSite::Pattern)
    for (const auto& [prefix, calls] : s.pattern) mark(prefix);
  else
    for (const auto& [prefix, calls] : s.qkv) mark(prefix);
  for (int64_t l = 0; l < layers; ++l)
    if (!seen[size_t(l)])
      throw AtlasError(std::string("the site ") + patch_site_name(site) + " needs " +
                       (rows.by_prefix ? rows.names[size_t(l)] : "layer " + std::to_string(l) + "'s attention") +
                       " to expose its heads' " +
                       (site == PatchSite::Pattern ? "probabilities" : "queries, keys and values") +
                       "; its kernel does not: use --site head");
}

// Head h's columns [rows, h*w .. (h+1)*w) of t set to from's.
void set_head_columns(Tensor& t, const Tensor& from, int64_t h, int64_t H) {
  const int64_t w = t.shape[1] / H;
  t.mat().middleCols(h * w, w) = from.mat().middleCols(h * w, w);
}

// The hook that puts the source's q, k, v or pattern of head h of layer l into a run; `calls`
// counts each sub-layer's calls so far (matched to the source's by order).
void set_input_hook(ActivationHooks& hooks, const ModelConfig& c, const PatchRows& rows, const RecordedRun& source,
                    PatchSite site, int64_t l, int64_t h, std::map<std::string, size_t>& calls) {
  const int64_t H = c.n_heads;
  auto mismatch = [](const std::string& prefix) {
    return AtlasError("activation patching: the two inputs ran " + prefix +
                      " a different number of times or with different shapes (Transformer-XL segments or ACT "
                      "steps differ); head sites need runs of the same structure");
  };
  if (site == PatchSite::Pattern) {
    hooks.pattern = [&c, &rows, &source, &calls, l, h, mismatch](const std::string& prefix, Tensor& t) {
      const size_t call = calls[prefix]++;
      if (rows.of(c, prefix) != l) return;
      const auto it = source.pattern.find(prefix);
      if (it == source.pattern.end() || call >= it->second.size() || it->second[call].shape != t.shape)
        throw mismatch(prefix);
      const size_t n = size_t(t.shape[1] * t.shape[2]);
      std::copy_n(it->second[call].data.begin() + ptrdiff_t(size_t(h) * n), n, t.data.begin() + ptrdiff_t(size_t(h) * n));
    };
    return;
  }
  const size_t which = site == PatchSite::Q ? 0 : site == PatchSite::K ? 1 : 2;
  hooks.qkv = [&c, &rows, &source, &calls, l, h, H, which, mismatch](const std::string& prefix, Tensor& q,
                                                                       Tensor& k, Tensor& v) {
    const size_t call = calls[prefix]++;
    if (rows.of(c, prefix) != l) return;
    Tensor& t = which == 0 ? q : which == 1 ? k : v;
    const auto it = source.qkv.find(prefix);
    if (it == source.qkv.end() || call >= it->second.size() || it->second[call][which].shape != t.shape)
      throw mismatch(prefix);
    set_head_columns(t, it->second[call][which], h, H);
  };
}

}  // namespace

const char* patch_site_name(PatchSite s) {
  switch (s) {
    case PatchSite::Resid: return "resid";
    case PatchSite::Attn: return "attn";
    case PatchSite::Mlp: return "mlp";
    case PatchSite::Head: return "head";
    case PatchSite::HeadPos: return "head-pos";
    case PatchSite::Q: return "q";
    case PatchSite::K: return "k";
    case PatchSite::V: return "v";
    case PatchSite::Pattern: return "pattern";
  }
  return "?";
}
const char* patch_direction_name(PatchDirection d) { return d == PatchDirection::Denoise ? "denoise" : "noise"; }
const char* patch_metric_name(PatchMetric m) {
  switch (m) {
    case PatchMetric::LogitDiff: return "logit-diff";
    case PatchMetric::Prob: return "prob";
    case PatchMetric::KL: return "kl";
    case PatchMetric::Loss: return "loss";
  }
  return "?";
}
PatchSite parse_patch_site(const std::string& s, const std::string& flag) {
  return parse_named_choice<PatchSite>(s, flag, {{"resid", PatchSite::Resid}, {"attn", PatchSite::Attn},
                                                 {"mlp", PatchSite::Mlp}, {"head", PatchSite::Head},
                                                 {"head-pos", PatchSite::HeadPos}, {"q", PatchSite::Q},
                                                 {"k", PatchSite::K}, {"v", PatchSite::V},
                                                 {"pattern", PatchSite::Pattern}});
}
PatchDirection parse_patch_direction(const std::string& s, const std::string& flag) {
  return parse_named_choice<PatchDirection>(s, flag, {{"denoise", PatchDirection::Denoise},
                                                      {"noise", PatchDirection::Noise}});
}
PatchMetric parse_patch_metric(const std::string& s, const std::string& flag) {
  return parse_named_choice<PatchMetric>(s, flag, {{"logit-diff", PatchMetric::LogitDiff}, {"prob", PatchMetric::Prob},
                                                   {"kl", PatchMetric::KL}, {"loss", PatchMetric::Loss}});
}

void check_patching(const Model& model, const std::vector<TokenInfo>& clean,
                    const std::vector<TokenInfo>& corrupted, const PatchSpec& spec) {
  if (model.config().architecture == Architecture::EncoderDecoder)
    throw AtlasError("this analysis covers encoder-only and decoder-only models (one input per run); an "
                     "encoder-decoder model (a source and a target per run) is supported by activation "
                     "patching with targets only (atlas patch --target)");
  check_patching(model, PatchingInput{clean, {}}, PatchingInput{corrupted, {}}, spec);
}

void check_patching(const Model& model, const PatchingInput& clean_in, const PatchingInput& corrupted_in,
                    const PatchSpec& spec) {
  const ModelConfig& c = model.config();
  const bool enc_dec = c.architecture == Architecture::EncoderDecoder;
  const std::vector<TokenInfo>& clean = clean_in.source;
  const std::vector<TokenInfo>& corrupted = corrupted_in.source;
  if (!enc_dec && (!clean_in.target.empty() || !corrupted_in.target.empty()))
    throw AtlasError("a target (decoder input) is only used by encoder-decoder models; this model is " +
                     std::string(c.architecture == Architecture::Encoder ? "an encoder" : "a decoder"));
  const char* source_side = enc_dec ? "source" : "input";
  if (clean.size() != corrupted.size())
    throw AtlasError(std::string("the clean ") + source_side + " is " + std::to_string(clean.size()) +
                     " tokens and the corrupted " + source_side + " " + std::to_string(corrupted.size()) +
                     "; activation patching needs two " + source_side +
                     "s of the same token length (token-aligned)");
  if (clean.empty()) throw AtlasError(std::string("activation patching needs a non-empty ") + source_side);
  if (enc_dec) {
    const size_t lt = clean_in.target.size(), lt2 = corrupted_in.target.size();
    if (lt != lt2)
      throw AtlasError("the clean target is " + std::to_string(lt) + " tokens and the corrupted target " +
                       std::to_string(lt2) +
                       "; activation patching needs two targets of the same token length (token-aligned)");
    if (lt == 0)
      throw AtlasError("activation patching on an encoder-decoder model needs a non-empty target (decoder "
                       "input): the metric is read at a target position");
    if (spec.site == PatchSite::Attn || spec.site == PatchSite::Mlp)
      throw AtlasError(std::string("the site ") + patch_site_name(spec.site) +
                       " patches one sub-layer output per layer; a decoder layer of an encoder-decoder model "
                       "has two attention sub-layers (self and cross) in its output: use --site resid, or "
                       "head-pos for one sub-layer's heads");
  }
  if (c.output == OutputHead::None)
    throw AtlasError("activation patching measures the output logits; this model has no output head");
  const char* metric = patch_metric_name(spec.metric);
  const int64_t vocab = c.vocab_size;
  auto check_token = [&](int32_t t, const char* which) {
    if (t < 0 || t >= vocab)
      throw AtlasError(std::string("the metric ") + metric + " needs " + which + " token inside the vocabulary (0.." +
                       std::to_string(vocab - 1) + "), got id " + std::to_string(t));
  };
  if (spec.metric != PatchMetric::KL) check_token(spec.token_a, "a first");
  if (spec.metric == PatchMetric::LogitDiff) check_token(spec.token_b, "a second");
  const int64_t L = int64_t(enc_dec ? clean_in.target.size() : clean.size());
  if (spec.position < -1 || spec.position >= L)
    throw AtlasError("position " + std::to_string(spec.position) + " is outside the " +
                     (enc_dec ? "target's " : "input's ") + std::to_string(L) + " positions (0.." + std::to_string(L - 1) + ", or -1 for the last)");
  bool heads = false;  // attention sub-layers with an output projection the hooks act on
  for (const auto& [name, t] : model.params())
    heads |= name.size() > 3 && name.compare(name.size() - 3, 3, ".wo") == 0 && global_layer_of(c, name) >= 0;
  if (!heads)
    throw AtlasError("this model has no multi-head attention layers (no per-layer output projection W^O) "
                     "to patch");
  if (layer_site(spec.site) && !has_layer_stack(c))
    throw AtlasError(std::string("the site ") + patch_site_name(spec.site) +
                     " patches a standard layer's input or output; this model's stack (Transformer-XL, "
                     "Universal Transformer or reversible) has no standard layers: use --site head or head-pos");
  if (input_site(spec.site) && c.xl())
    throw AtlasError(std::string("the site ") + patch_site_name(spec.site) +
                     " patches a head's queries, keys, values or pattern; Transformer-XL's relative attention "
                     "does not expose them: use --site head");
  if (spec.site == PatchSite::Pattern && attention_mechanism(c, true))
    throw AtlasError(std::string("the site pattern patches the probabilities of the softmax kernel; this model's "
                     "attention runs the ") + attention_mechanism(c, true)->name +
                     " kernel, which does not expose them: use --site q, k, v or head");
  if (spec.site == PatchSite::Mlp && c.norm_position != NormPosition::Pre)
    throw AtlasError("the site mlp needs pre-norm layers (output = input + attention + MLP); in this post-norm "
                     "model the MLP output is inside the layer's norm: use resid, attn or head");
}

double patch_metric(const PatchSpec& spec, const Tensor& clean_logits, const Tensor& logits) {
  const int64_t L = logits.shape[0], n = logits.shape[1];
  const int64_t i = spec.position < 0 ? L - 1 : spec.position;
  const float* x = logits.data.data() + i * n;
  switch (spec.metric) {
    case PatchMetric::LogitDiff: return double(x[spec.token_a]) - double(x[spec.token_b]);
    case PatchMetric::Prob: return std::exp(log_softmax_row(x, n)[size_t(spec.token_a)]);
    case PatchMetric::Loss: return -log_softmax_row(x, n)[size_t(spec.token_a)];
    case PatchMetric::KL: {
      const std::vector<double> lp = log_softmax_row(clean_logits.data.data() + i * n, n);
      const std::vector<double> lq = log_softmax_row(x, n);
      double kl = 0;
      for (int64_t v = 0; v < n; ++v) {
        const double p = std::exp(lp[size_t(v)]);
        if (p > 0) kl += p * (lp[size_t(v)] - lq[size_t(v)]);
      }
      return kl;
    }
  }
  return 0;
}

PatchResult activation_patching(const Model& model, const std::vector<TokenInfo>& clean,
                                const std::vector<TokenInfo>& corrupted, const PatchSpec& spec,
                                const RunOptions& options,
                                const std::function<void(int64_t, int64_t)>& progress, PatchResult* partial) {
  check_patching(model, clean, corrupted, spec);
  return activation_patching(model, PatchingInput{clean, {}}, PatchingInput{corrupted, {}}, spec, options, progress,
                             partial);
}

PatchResult activation_patching(const Model& model, const PatchingInput& clean, const PatchingInput& corrupted,
                                const PatchSpec& spec, const RunOptions& options,
                                const std::function<void(int64_t, int64_t)>& progress, PatchResult* partial) {
  check_patching(model, clean, corrupted, spec);
  const ModelConfig& c = model.config();
  const bool enc_dec = c.architecture == Architecture::EncoderDecoder;
  // L: the measured sequence's length (the target of an encoder-decoder model)
  const int64_t L = int64_t(enc_dec ? clean.target.size() : clean.source.size()), H = c.n_heads;
  PatchResult r;
  r.spec = spec;
  r.position = spec.position < 0 ? L - 1 : spec.position;

  RunOptions base = options;
  base.trace = TraceOptions::none();
  base.prefix_cache = nullptr;
  base.progress = nullptr;
  base.hooks = {};
  // A causal model's rows before p do not depend on tokens from p on (prefix_cache.h), so a patch
  // after the measured row leaves the metric at the unpatched target's: those cells need no run.
  const bool causal_rows = incremental_forward_applies(c, base);

  const bool denoise = spec.direction == PatchDirection::Denoise;
  const PatchingInput& target_input = denoise ? corrupted : clean;
  const PatchingInput& source_input = denoise ? clean : corrupted;
  const RecordedRun clean_run = record_run(model, clean, base, spec.site);

  PatchRows rows;
  rows.by_prefix = enc_dec;
  if (enc_dec && layer_site(spec.site)) {  // resid: every encoder layer, then every decoder layer
    for (int64_t l = 0; l < c.n_layers; ++l) {
      rows.names.push_back("encoder.layer" + std::to_string(l));
      rows.lengths.push_back(int64_t(clean.source.size()));
    }
    for (int64_t l = 0; l < c.decoder_layers(); ++l) {
      rows.names.push_back("decoder.layer" + std::to_string(l));
      rows.lengths.push_back(L);
    }
  } else if (enc_dec) {
    for (const std::string& prefix : clean_run.head_order)
      if (global_layer_of(c, prefix) >= 0) {
        rows.names.push_back(prefix);
        rows.lengths.push_back(clean_run.heads.at(prefix).front().shape[0]);
      }
  } else {
    for (int64_t l = 0; l < ablation_layer_count(c); ++l) {
      std::string name = patch_layer_name(c, l);
      if (!layer_site(spec.site))
        for (const std::string& prefix : clean_run.head_order)
          if (global_layer_of(c, prefix) == l) {
            name = prefix;
            break;
          }
      rows.names.push_back(name);
      rows.lengths.push_back(L);
    }
  }
  if (rows.names.empty())
    throw AtlasError("this model's attention sub-layers do not report their heads' outputs: nothing to patch");
  const int64_t layers = int64_t(rows.names.size());
  const int64_t P = enc_dec ? *std::max_element(rows.lengths.begin(), rows.lengths.end()) : L;  // positions axis
  r.row_names = rows.names;
  r.shape = per_head(spec.site)               ? std::vector<int64_t>{layers, H}
            : spec.site == PatchSite::HeadPos ? std::vector<int64_t>{layers, H, P}
                                              : std::vector<int64_t>{layers, P};
  int64_t cells = 1;
  for (int64_t s : r.shape) cells *= s;
  if (progress) progress(1, 2 + cells);
  const RecordedRun corrupted_run = record_run(model, corrupted, base, spec.site);
  if (progress) progress(2, 2 + cells);
  const RecordedRun& target = denoise ? corrupted_run : clean_run;
  const RecordedRun& source = denoise ? clean_run : corrupted_run;
  r.clean = patch_metric(spec, clean_run.logits, clean_run.logits);
  r.corrupted = patch_metric(spec, clean_run.logits, corrupted_run.logits);
  const double unpatched = denoise ? r.corrupted : r.clean;
  if (spec.site == PatchSite::HeadPos)
    for (const auto& [prefix, calls] : source.heads)
      for (const Tensor& t : calls)
        if (const int64_t l = rows.of(c, prefix); l >= 0 && t.shape[0] != rows.lengths[size_t(l)])
          throw AtlasError("the site head-pos needs every attention call to see the whole input; " + prefix +
                           " runs on " + std::to_string(t.shape[0]) + " of the " +
                           std::to_string(rows.lengths[size_t(l)]) +
                           " positions at a time (Transformer-XL segments): use --site head");

  if (input_site(spec.site)) check_inputs_recorded(c, source, spec.site, rows);

  const auto normalise = [&r] {
    const double span = r.clean - r.corrupted;
    r.normalised.resize(r.raw.size());
    for (size_t i = 0; i < r.raw.size(); ++i)
      r.normalised[i] = span != 0 ? (r.raw[i] - r.corrupted) / span + 0.0 : std::numeric_limits<double>::quiet_NaN();  // + 0.0: no -0
  };
  // Cells run in order, so a cancel at `cell` leaves every earlier cell finished.
  const auto cancelled_at = [&](int64_t cell) {
    if (partial) {
      std::fill(r.raw.begin() + cell, r.raw.end(), std::numeric_limits<double>::quiet_NaN());
      normalise();
      r.complete = false;
      *partial = r;
    }
    throw Cancelled();
  };

  std::map<int64_t, Eigen::MatrixXd> mlp_rows;  // per layer, computed on first use
  r.raw.assign(size_t(cells), unpatched);
  int64_t done = 2;
  for (int64_t cell = 0; cell < cells; ++cell, ++done) {
    if (options.cancel && options.cancel->load()) cancelled_at(cell);
    const int64_t l = cell / (cells / layers);
    const int64_t h = per_head(spec.site) ? cell % H : spec.site == PatchSite::HeadPos ? (cell / r.shape.back()) % H : -1;
    const int64_t p = per_position(spec.site) ? cell % r.shape.back() : -1;
    if (p >= 0 && p >= rows.lengths[size_t(l)]) {
      // past this row's stack's length (an encoder-decoder model's shorter side): no such cell
      r.raw[size_t(cell)] = std::numeric_limits<double>::quiet_NaN();
      if (progress) progress(done + 1, 2 + cells);
      continue;
    }
    if ((causal_rows && p > r.position) ||
        (!spec.cells.empty() && !std::binary_search(spec.cells.begin(), spec.cells.end(), cell))) {
      if (progress) progress(done + 1, 2 + cells);
      continue;
    }
    RunOptions o = base;
    PatchingInput run = target_input;
    std::map<std::string, size_t> calls;  // heads calls so far per sub-layer, matched to the source's
    // an encoder-decoder model's decoder rows read the target, the rest the source (or the one input)
    const bool target_side = enc_dec && rows.names[size_t(l)].rfind("decoder.", 0) == 0;
    const bool first_layer = rows.names[size_t(l)].ends_with(".layer0");
    if (spec.site == PatchSite::Resid && first_layer) {
      (target_side ? run.target : run.source)[size_t(p)] =
          (target_side ? source_input.target : source_input.source)[size_t(p)];
    } else if (spec.site == PatchSite::Resid) {
      const std::string before = rows.names[size_t(l - 1)];  // the layer before, in the same stack
      const Tensor& from = source.layers.at(before).second;
      o.hooks.layer = [&, before, p](const std::string& layer, const Tensor&, Tensor& out) {
        if (layer != before) return;
        out.mat().row(p) = from.mat().row(p);
      };
    } else if (spec.site == PatchSite::Mlp) {
      const std::string at = patch_layer_name(c, l);
      if (!mlp_rows.count(l)) mlp_rows[l] = mlp_patched_rows(model, target, source, at, self_attention_of(c, l));
      const Eigen::MatrixXd& rows = mlp_rows.at(l);
      o.hooks.layer = [&, at, p](const std::string& layer, const Tensor&, Tensor& out) {
        if (layer != at) return;
        out.mat().row(p) = rows.row(p).cast<float>();
      };
    } else if (input_site(spec.site)) {
      set_input_hook(o.hooks, c, rows, source, spec.site, l, h, calls);
    } else {
      o.hooks.heads = [&, l, h, p](const std::string& prefix, Tensor& t) {
        const size_t call = calls[prefix]++;
        if (rows.of(c, prefix) != l) return;
        const Tensor& from = source_call(source, prefix, call, t);
        const int64_t dh = t.shape[1] / H;
        const int64_t c0 = h < 0 ? 0 : h * dh, c1 = h < 0 ? t.shape[1] : (h + 1) * dh;
        const int64_t r0 = p < 0 ? 0 : p, r1 = p < 0 ? t.shape[0] : p + 1;
        t.mat().block(r0, c0, r1 - r0, c1 - c0) = from.mat().block(r0, c0, r1 - r0, c1 - c0);
      };
    }
    RunResult patched;
    try {
      patched = model.forward(run.source, run.target, o);
    } catch (const Cancelled&) {
      cancelled_at(cell);
    }
    r.raw[size_t(cell)] = patch_metric(spec, clean_run.logits, patched.output);
    ++r.runs;
    if (progress) progress(done + 1, 2 + cells);
  }
  normalise();
  return r;
}

}  // namespace atlas
