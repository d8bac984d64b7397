// ViT benchmark: google/vit-base-patch16-224's shape (12 layers, d 768, 12 heads,
// d_ff 3072, 16 x 16 patches of a 224 x 224 image, 1000 classes) with random weights.
// Measures, as medians: preprocessing a 640 x 480 photo (PIL-style bilinear resize + patches),
// the full forward with attention tracing (which includes the rollout), and, as the baseline
// measured in the same run, a text encoder of the same shape (BERT-base-like, post-norm) on
// the same 197 tokens; the ratio shows what image input and the rollout add.
// Usage: bench_vit [--repeats R]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "bench/bench_timing.h"
#include "core/analysis/attention_rollout.h"
#include "core/model/model.h"
#include "core/model/params.h"
#include "core/input/patch_input.h"

using namespace atlas;
using atlas::bench::median_ms;

namespace {


ModelConfig base_shape() {
  ModelConfig c;
  c.architecture = Architecture::Encoder;
  c.d_model = 768;
  c.n_heads = 12;
  c.d_ff = 3072;
  c.n_layers = 12;
  c.activation = FfnActivation::Gelu;
  c.positional = Positional::Learned;
  c.scale_embedding = false;
  c.norm_eps = 1e-12f;
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = 5;
  for (int i = 1; i + 1 < argc; i += 2)
    if (!std::strcmp(argv[i], "--repeats")) repeats = std::atoi(argv[i + 1]);

  ModelConfig vit = base_shape();
  vit.name = "vit-base-shape";
  vit.norm_position = NormPosition::Pre;
  vit.output = OutputHead::Untied;
  vit.head.bias = true;
  vit.embeddings.patches.size = 16;
  vit.max_positions = 197;
  vit.vocab_size = 1000;
  vit.tokenizer.kind = TokenizerKind::Labels;
  for (int i = 0; i < 1000; ++i) vit.tokenizer.vocab.push_back("class " + std::to_string(i));
  const Model vit_model(vit, init_params(vit, 1));

  RgbImage photo{480, 640, std::vector<uint8_t>(size_t(480 * 640 * 3))};
  for (size_t i = 0; i < photo.rgb.size(); ++i) photo.rgb[i] = uint8_t((i * 2654435761u) >> 24);
  PatchInput input;
  const double prep_ms = median_ms(repeats, [&] { input = patch_input(vit, photo); });
  RunOptions options;  // default tracing: attention of every layer, masks, positions, rollout
  RunResult result;
  const double vit_ms = median_ms(repeats, [&] { result = vit_model.forward(input.tokens, {}, options); });
  const double rollout_ms = median_ms(repeats, [&] { attention_rollout(result.trace, "encoder"); });

  ModelConfig text = base_shape();
  text.name = "text-encoder-same-shape";
  text.vocab_size = 30522;
  text.max_positions = 512;
  text.output = OutputHead::None;
  const Model text_model(text, init_params(text, 1));
  std::vector<TokenInfo> tokens(197);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = {int32_t((i * 7919) % 30522), ""};
  const double text_ms = median_ms(repeats, [&] { text_model.forward(tokens, {}, options); });

  std::printf("{\"bench\": \"vit_preprocess_640x480\", \"median_ms\": %.2f}\n", prep_ms);
  std::printf("{\"bench\": \"vit_base_forward\", \"tokens\": 197, \"median_ms\": %.1f, "
              "\"rollout_ms\": %.2f}\n", vit_ms, rollout_ms);
  std::printf("{\"bench\": \"text_encoder_same_shape_forward\", \"tokens\": 197, \"median_ms\": %.1f}\n", text_ms);
  std::printf("{\"bench\": \"vit_over_text_encoder\", \"ratio\": %.3f, "
              "\"preprocess_over_text_encoder\": %.4f}\n", vit_ms / text_ms, prep_ms / text_ms);
  return 0;
}
