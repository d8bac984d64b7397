#pragma once
// Input- and output-layer options of Hugging Face encoders, read by
// config_embeddings.cpp from the nested objects
//   {"embeddings": {"token_types": 2, "norm": true}}                      (BERT)
//   {"embeddings": {"patches": {"size": 16, "image_size": 224, ...}}}      (ViT)
//   {"head": {"transform": true, "bias": true}}                            (BERT's MLM head)
// Documented in docs/model-format.md.
#include <cstdint>
#include <vector>

namespace atlas {

// Patch embedding (ViT, Dosovitskiy et al.): the input is an image cut into size x size
// patches, each flattened in (channel, row, column) order and mapped by embed.patch.weight
// [d, channels*size*size] + embed.patch.bias; a learned embed.cls row is prepended when `cls`.
// Pixels are first rescaled (x * rescale) and normalised per channel ((x - mean) / std).
struct PatchOptions {
  int64_t size = 0;  // 0 = token embeddings (every other model)
  int64_t image_size = 224;
  int64_t channels = 3;
  bool cls = true;
  float rescale = 1.0f / 255.0f;
  std::vector<float> mean = {0.5f, 0.5f, 0.5f};  // one per channel
  std::vector<float> std = {0.5f, 0.5f, 0.5f};
  int64_t per_side() const { return size > 0 ? image_size / size : 0; }
  int64_t patch_count() const { return per_side() * per_side(); }
  int64_t features() const { return channels * size * size; }
  bool enabled() const { return size > 0; }
};

struct EmbeddingOptions {
  // Rows of the token-type (segment) embedding added to every token (BERT: 2); 0 = none.
  // A token's row is TokenInfo::type.
  int64_t token_types = 0;
  // Normalise the summed embeddings (BERT's embeddings.LayerNorm), tensors embed.norm.*.
  bool norm = false;
  PatchOptions patches;
};

// Extras of the output head (when `output` is not "none").
struct HeadOptions {
  // Before the output matrix: dense d -> d (output.transform.weight/bias), the model's FFN
  // activation, then a norm (output.transform_norm.*): BERT's and DistilBERT's MLM head.
  bool transform = false;
  bool bias = false;  // add output.bias [vocab] to the logits (BERT's MLM head, ViT's classifier)
};

}  // namespace atlas
