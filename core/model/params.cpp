#include "core/model/params.h"

#include <cmath>
#include <set>
#include <sstream>

#include "core/formats/packed_weights.h"
#include "core/tensor/error.h"
#include "core/tensor/float_scan.h"
#include "core/model/stack_kind_module.h"
#include "core/tensor/random.h"
#include "core/variants/score_functions/score_functions.h"
#include "core/variants/relative_attention/relative_attention.h"

namespace atlas {

namespace {

void add_norm(std::vector<ParamSpec>& specs, const ModelConfig& c, const std::string& prefix) {
  if (c.norm == NormKind::LayerNorm) {
    specs.push_back({prefix + ".gamma", {c.d_model}, InitKind::Ones});
    specs.push_back({prefix + ".beta", {c.d_model}, InitKind::Zeros});
  } else if (c.norm == NormKind::RmsNorm) {  // a gain, no bias
    specs.push_back({prefix + ".gamma", {c.d_model}, InitKind::Ones});
  } else {
    // ScaleNorm's single learned scale, initialised to sqrt(d) (Nguyen & Salazar).
    specs.push_back({prefix + ".g", {1}, InitKind::Constant,
                     std::sqrt(static_cast<float>(c.d_model))});
  }
}

void add_attention(std::vector<ParamSpec>& specs, const ModelConfig& c,
                   const std::string& prefix) {
  // Grouped-query attention: keys and values have kv_heads heads of d_head; queries n_heads
  // (attention_width = n_heads * d_head, d_model unless attention.head_dim is set).
  const int64_t kv = c.kv_heads() * c.d_head(), q = c.attention_width();
  specs.push_back({prefix + ".wq", {q, c.d_model}});
  specs.push_back({prefix + ".wk", {kv, c.d_model}});
  specs.push_back({prefix + ".wv", {kv, c.d_model}});
  specs.push_back({prefix + ".wo", {c.d_model, q}});
  if (c.attention_bias) {
    specs.push_back({prefix + ".bq", {q}, InitKind::Zeros});
    specs.push_back({prefix + ".bk", {kv}, InitKind::Zeros});
    specs.push_back({prefix + ".bv", {kv}, InitKind::Zeros});
    specs.push_back({prefix + ".bo", {c.d_model}, InitKind::Zeros});
  }
}

void add_ffn(std::vector<ParamSpec>& specs, const ModelConfig& c, const std::string& prefix) {
  specs.push_back({prefix + ".w1", {c.d_ff, c.d_model}});
  if (c.ffn_bias) specs.push_back({prefix + ".b1", {c.d_ff}, InitKind::Zeros});
  specs.push_back({prefix + ".w2", {c.d_model, c.d_ff}});
  if (c.ffn_bias) specs.push_back({prefix + ".b2", {c.d_model}, InitKind::Zeros});
  if (c.ffn.gated) {  // the up projection beside the gate w1
    specs.push_back({prefix + ".w3", {c.d_ff, c.d_model}});
    if (c.ffn_bias) specs.push_back({prefix + ".b3", {c.d_ff}, InitKind::Zeros});
  }
}

}  // namespace

std::vector<ParamSpec> param_specs(const ModelConfig& c) {
  const StackKindModule* kind = stack_kind_module(c);  // core/model/stack_kind_module.h
  if (kind && kind->host) return kind->host->param_specs(c);  // a model of its own
  std::vector<ParamSpec> specs;
  const PatchOptions& patches = c.embeddings.patches;
  if (patches.enabled()) {  // ViT: patches replace the token table (patch_input.h)
    specs.push_back({"embed.patch.weight", {c.d_model, patches.features()}});
    specs.push_back({"embed.patch.bias", {c.d_model}, InitKind::Zeros});
    if (patches.cls) specs.push_back({"embed.cls", {c.d_model}});
  } else {
    specs.push_back({"embed.tokens", {c.vocab_size, c.d_model}});
  }
  if (c.positional == Positional::Learned)
    specs.push_back({"embed.positions", {c.max_positions, c.d_model}});
  if (c.embeddings.token_types > 0)
    specs.push_back({"embed.token_types", {c.embeddings.token_types, c.d_model}});
  if (c.embeddings.norm) add_norm(specs, c, "embed.norm");
  if (c.has_encoder()) {
    for (int64_t i = 0; i < c.n_layers; ++i) {
      std::string p = "encoder.layer" + std::to_string(i);
      add_norm(specs, c, p + ".attn_norm");
      add_attention(specs, c, p + ".attn");
      add_norm(specs, c, p + ".ffn_norm");
      add_ffn(specs, c, p + ".ffn");
    }
    if (c.norm_position == NormPosition::Pre) add_norm(specs, c, "encoder.final_norm");
  }
  if (c.has_decoder()) {
    for (int64_t i = 0; i < c.decoder_layers(); ++i) {
      std::string p = "decoder.layer" + std::to_string(i);
      add_norm(specs, c, p + ".self_attn_norm");
      add_attention(specs, c, p + ".self_attn");
      if (c.architecture == Architecture::EncoderDecoder) {
        add_norm(specs, c, p + ".cross_attn_norm");
        add_attention(specs, c, p + ".cross_attn");
      }
      add_norm(specs, c, p + ".ffn_norm");
      add_ffn(specs, c, p + ".ffn");
    }
    if (c.norm_position == NormPosition::Pre) add_norm(specs, c, "decoder.final_norm");
  }
  if (c.head.transform) {  // BERT's MLM head: dense, activation, norm before the output matrix
    specs.push_back({"output.transform.weight", {c.d_model, c.d_model}});
    specs.push_back({"output.transform.bias", {c.d_model}, InitKind::Zeros});
    add_norm(specs, c, "output.transform_norm");
  }
  if (c.output == OutputHead::Untied) specs.push_back({"output.weight", {c.vocab_size, c.d_model}});
  if (c.head.bias && c.output != OutputHead::None)
    specs.push_back({"output.bias", {c.vocab_size}, InitKind::Zeros});
  // The stack kind's own (Universal's shared block, XL's u, v, W_kR and GTrXL's gates).
  if (kind && kind->append_param_specs) kind->append_param_specs(specs, c);
  append_relative_attention_specs(specs, c);  // Shaw tables, span parameters (relative_attention.cpp)
  append_score_specs(specs, c);      // score function weights (score_functions.cpp)
  return specs;
}

int64_t parameter_count(const ModelConfig& config) {
  int64_t n = 0;
  for (const auto& s : param_specs(config)) n += numel_of(s.shape);
  return n;
}

ParamStore init_params(const ModelConfig& c, uint64_t seed) {
  ParamStore store;
  for (const auto& spec : param_specs(c)) {
    Tensor t(spec.shape);
    switch (spec.init) {
      case InitKind::Zeros: break;
      case InitKind::Ones: std::fill(t.data.begin(), t.data.end(), 1.0f); break;
      case InitKind::Constant: std::fill(t.data.begin(), t.data.end(), spec.value); break;
      case InitKind::Normal: {
        // Embedding tables: d^-1/2 when scaled by sqrt(d) (so scaled rows have unit-size
        // entries, as in seed 002's models), else init_std. Projections: Glorot normal.
        double std;
        if (spec.name.rfind("embed.", 0) == 0 || spec.name == "output.weight")
          std = c.scale_embedding ? 1.0 / std::sqrt(static_cast<double>(c.d_model)) : c.init_std;
        else
          std = std::sqrt(2.0 / static_cast<double>(spec.shape[0] + spec.shape[1]));
        Rng rng(seed ^ hash_name(spec.name));
        for (float& v : t.data) v = static_cast<float>(rng.normal() * std);
        break;
      }
    }
    store.emplace(spec.name, std::move(t));
  }
  return store;
}

void check_param_shapes(const ModelConfig& c, const ParamStore& params,
                        const std::string& origin) {
  std::set<std::string> expected;
  for (const auto& spec : param_specs(c)) {
    expected.insert(spec.name);
    auto it = params.find(spec.name);
    if (it == params.end())
      throw AtlasError(origin + ": missing tensor " + spec.name + " " + shape_str(spec.shape) +
                       " required by the config");
    if (it->second.shape != spec.shape)
      throw AtlasError(origin + ": tensor " + spec.name + " has shape " +
                       shape_str(it->second.shape) + ", config expects " +
                       shape_str(spec.shape));
  }
  for (const auto& [name, t] : params)
    if (!expected.count(name))
      throw AtlasError(origin + ": unexpected tensor " + name + " " + shape_str(t.shape) +
                       " (not used by this config)");
}

std::vector<std::string> check_params(const ModelConfig& c, const ParamStore& params,
                                      const std::string& origin, const LoadMonitor* monitor) {
  check_param_shapes(c, params, origin);
  std::vector<std::string> warnings;
  double total = 0, done = 0;
  for (const auto& [name, t] : params) total += double(held_bytes(t));
  for (const auto& [name, t] : params) {
    load_step(monitor, "Checking weights", done, total);
    done += double(held_bytes(t));
    const int64_t bad = scan_weights(t).non_finite;
    if (bad) {
      std::ostringstream w;
      w << origin << ": tensor " << name << " has " << bad << " non-finite value"
        << (bad == 1 ? "" : "s") << " (NaN or Inf); outputs will be NaN where they flow";
      warnings.push_back(w.str());
    }
  }
  return warnings;
}

const Tensor& required_param(const ParamStore& params, const std::string& name) {
  auto it = params.find(name);
  if (it == params.end()) throw AtlasError("internal: weight " + name + " missing");
  return it->second;
}

}  // namespace atlas
