#pragma once
// The case bench_patching and bench_attribution_patching measure: GPT-2's composition
// (tiny-decoder) at GPT-2-small's shape with random weights, a clean input of n tokens and a
// corrupted one differing at n / 2, and a logit-difference metric.
#include <vector>

#include "core/analysis/patching.h"
#include "core/model/params.h"
#include "core/model/presets.h"

namespace atlas::bench {

inline ModelConfig gpt2_small_shaped(int64_t layers) {
  ModelConfig c = preset_config("tiny-decoder");
  c.d_model = 768;
  c.n_heads = 12;
  c.d_ff = 3072;
  c.n_layers = layers;
  c.vocab_size = 50257;
  c.max_positions = 1024;
  c.init_std = 0.02f;
  return c;
}

struct PatchingCase {
  std::vector<TokenInfo> clean, corrupted;
};
// Fills spec's metric and tokens; returns the two inputs.
inline PatchingCase patching_case(const ModelConfig& c, int64_t n, PatchSpec& spec) {
  PatchingCase k;
  for (int64_t i = 0; i < n; ++i) k.clean.push_back({int32_t((i * 7919) % c.vocab_size), "t"});
  k.corrupted = k.clean;
  k.corrupted[size_t(n / 2)].id = 1234;
  spec.metric = PatchMetric::LogitDiff;
  spec.token_a = 100;
  spec.token_b = 200;
  return k;
}

}  // namespace atlas::bench
