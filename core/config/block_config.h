#pragma once
// Block options of modern decoder checkpoints (Llama, Mistral, Qwen2, Gemma, Phi-3), held by
// ModelConfig as the "attention" and "ffn" sections (core/config/block_config.cpp; keys in
// docs/model-format.md).
#include <cstdint>

namespace atlas {

struct AttentionLayout {
  // Grouped-query attention (Ainslie et al. 2023): query head h reads key/value head
  // h / (n_heads / kv_heads), as Hugging Face's repeat_kv. 0 = n_heads (multi-head); 1 =
  // multi-query attention. The projections wk, wv are [kv_heads * d_head, d_model].
  int64_t kv_heads = 0;
  // Causal sliding window (Mistral): query i sees keys j with i - window < j <= i. 0 = none.
  int64_t sliding_window = 0;
  // Width of a query/key/value head when it is not d_model / n_heads (Gemma 7B: 16 heads of
  // 256 over d_model 3072; Mistral NeMo): wq is [n_heads * head_dim, d_model], wo
  // [d_model, n_heads * head_dim]. 0 = d_model / n_heads.
  int64_t head_dim = 0;
};

struct FfnOptions {
  // Gated linear unit (Shazeer 2020): w2 (act(w1 x) * (w3 x)); SwiGLU with "silu" (Llama),
  // GeGLU with "gelu_tanh" (Gemma). w1 is the gate, w3 the up projection, w2 the down.
  bool gated = false;
};

}  // namespace atlas
