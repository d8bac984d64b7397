#pragma once
// One push-constant struct per shader, mirrored member for member (all 4-byte scalars, so
// std430 and C++ agree on offsets) by the `layout(push_constant)` block of the .comp file
// named in the comment. Element offsets called *_base are where the bound window of a buffer
// starts (see gpu_ops.cpp: big buffers are bound in windows of maxStorageBufferRange).
#include <cstdint>

namespace atlas::vk {

// shaders/add.comp: y[i] = a[i] + b[i] for i in [i0, i0 + n)
struct AddPC {
  uint32_t i0, n, a_base, b_base, y_base;
};

// shaders/scale.comp: y[i] = s * x[i]
struct ScalePC {
  uint32_t i0, n, x_base, y_base;
  float s;
};

// shaders/activation.comp: kind 0 = ReLU, 1 = GELU (erf), 2 = GELU (tanh)
struct ActivationPC {
  uint32_t i0, n, x_base, y_base, kind;
};

// The three row kernels share one layout: rows [row0, row0 + rows) of length d.
struct RowPC {
  uint32_t row0, rows, d, x_base, y_base;
  float eps;
};
using LayerNormPC = RowPC;     // shaders/layer_norm.comp
using ScaleNormPC = RowPC;     // shaders/scale_norm.comp
using RowNormalizePC = RowPC;  // shaders/row_normalize.comp
using RmsNormPC = RowPC;       // shaders/rms_norm.comp

// shaders/embedding.comp: y[r, c] = table[ids[r], c] * scale for rows [row0, row0 + rows)
struct EmbeddingPC {
  uint32_t row0, rows, d, vocab, y_base;
  float scale;
};

// shaders/linear.comp: y[m, n] = sum_k x[m, k] w[n, k] + b[n], rows [row0, row0 + rows)
struct LinearPC {
  uint32_t row0, rows, n, k, x_base, y_base, has_bias;
};

// shaders/linear_packed.comp: LinearPC's product with w held in its file's encoding (ggml
// type `type`, blocks of block_elems values in block_bytes bytes); the bound weight window
// holds output columns [col0, col0 + cols), its row r starting at byte w_byte0 + r * row_bytes.
struct LinearPackedPC {
  uint32_t row0, rows, n, k, x_base, y_base, has_bias;
  uint32_t col0, cols, type, row_bytes, w_byte0, block_elems, block_bytes;
};

// shaders/embedding_packed.comp: EmbeddingPC's gather from a table held in its file's encoding.
struct EmbeddingPackedPC {
  uint32_t row0, rows, d, vocab, y_base, type, row_bytes, block_elems, block_bytes;
  float scale;
};

// shaders/attention.comp: one workgroup per (head, 16 query rows).
enum AttentionFlags : uint32_t {
  kAttnKeyValid = 1,  // binding 3 holds key_valid[Lk] as uint
  kAttnAllowed = 2,   // binding 4 holds allowed[Lq * Lk] as bits, 32 per uint
  kAttnProbs = 4,     // write probabilities to binding 6
  kAttnScores = 8,    // write masked scores to binding 7
  kAttnCausal = 16,
};
struct AttentionPC {
  uint32_t lq, lk, heads, dh, dv;
  uint32_t head0, row0, row_end;  // first head, query rows [row0, row_end) of this dispatch
  uint32_t flags;
  int32_t causal_offset;
  float scale;
  uint32_t probs_base, scores_base;
  int32_t window;  // with causal: keys j > i + causal_offset - window only (Mistral); 0 = none
};

// shaders/repeat_heads.comp: one invocation per output element.
struct RepeatHeadsPC {
  uint32_t rows, kv, groups, dh;
};

static_assert(sizeof(RepeatHeadsPC) <= 128);
static_assert(sizeof(LinearPackedPC) <= 128 && sizeof(EmbeddingPackedPC) <= 128);
static_assert(sizeof(AddPC) <= 128 && sizeof(ScalePC) <= 128 && sizeof(ActivationPC) <= 128);
static_assert(sizeof(RowPC) <= 128 && sizeof(EmbeddingPC) <= 128 && sizeof(LinearPC) <= 128);
static_assert(sizeof(AttentionPC) <= 128, "Vulkan guarantees only 128 bytes of push constants");

}  // namespace atlas::vk
