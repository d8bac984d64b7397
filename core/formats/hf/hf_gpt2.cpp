// GPT-2 family (gpt2, gpt2-medium/large/xl, distilgpt2) from Hugging Face: a decoder-only,
// pre-norm Transformer with learned positions, GELU (tanh form), LayerNorm eps 1e-5 and the
// output head tied to wte (openai/gpt-2 src/model.py; HF modeling_gpt2.py).
// HF stores its Conv1D weights [in, out] (y = x W + b), the engine [out, in]: transposed here.
// c_attn holds q, k, v side by side in its output columns, in that order.
#include <string>

#include "core/formats/hf/hf_families.h"

namespace atlas::hf {
namespace {

ModelConfig gpt2_config(const ConfigReader& r) {
  ModelConfig c;
  c.architecture = Architecture::Decoder;
  c.vocab_size = r.dimension("vocab_size", kMaxVocab);
  c.d_model = r.dimension("n_embd", kMaxDModel);
  c.n_layers = r.dimension("n_layer", kMaxLayers);
  c.n_heads = r.dimension("n_head", kMaxHeads);
  // Older files name the context length n_ctx; n_positions wins when both are present.
  c.max_positions = r.integer("n_positions", r.integer("n_ctx", 1024));
  // n_inner: null or absent means 4 * n_embd (HF GPT2MLP); n_embd is at most 65536 here.
  c.d_ff = r.j.contains("n_inner") && !r.j["n_inner"].is_null() ? r.integer("n_inner", 0)
                                                                 : 4 * c.d_model;
  c.norm_eps = static_cast<float>(r.number("layer_norm_epsilon", 1e-5));
  c.activation = activation_from(r, "activation_function", "gelu_new");
  c.positional = Positional::Learned;
  c.scale_embedding = false;
  c.norm = NormKind::LayerNorm;
  c.norm_position = NormPosition::Pre;
  c.attention_bias = true;
  c.ffn_bias = true;
  // transformers ties lm_head to wte unless the config says otherwise; an untied head is read
  // from lm_head.weight.
  c.output = r.boolean("tie_word_embeddings", true) ? OutputHead::Tied : OutputHead::Untied;
  // Options that change the attention maths the engine does not implement are refused rather
  // than silently giving different numbers.
  if (!r.boolean("scale_attn_weights", true))
    r.refuse("scale_attn_weights false (attention without the 1/sqrt(d_head) scale) is not supported");
  if (r.boolean("scale_attn_by_inverse_layer_idx", false))
    r.refuse("scale_attn_by_inverse_layer_idx true is not supported");
  if (r.boolean("add_cross_attention", false))
    r.refuse("add_cross_attention true (GPT-2 as a decoder of an encoder-decoder) is not supported");
  return c;
}

void norm(TensorSource& src, ParamStore& out, const std::string& hf, const std::string& engine,
          int64_t d) {
  out[engine + ".gamma"] = src.take(hf + ".weight", {d});
  out[engine + ".beta"] = src.take(hf + ".bias", {d});
}

void gpt2_params(ModelConfig& c, TensorSource& src, ParamStore& out) {
  const int64_t d = c.d_model, f = c.d_ff;
  out["embed.tokens"] = src.take("wte.weight", {c.vocab_size, d});
  out["embed.positions"] = src.take("wpe.weight", {c.max_positions, d});
  for (int64_t i = 0; i < c.n_layers; ++i) {
    const std::string h = "h." + std::to_string(i), p = "decoder.layer" + std::to_string(i);
    norm(src, out, h + ".ln_1", p + ".self_attn_norm", d);
    Tensor qkv = src.take(h + ".attn.c_attn.weight", {d, 3 * d});  // [in, out = q | k | v]
    Tensor qkv_bias = src.take(h + ".attn.c_attn.bias", {3 * d});
    const char* w[] = {".wq", ".wk", ".wv"};
    const char* b[] = {".bq", ".bk", ".bv"};
    for (int part = 0; part < 3; ++part) {
      out[p + ".self_attn" + w[part]] = transpose(columns(qkv, part * d, (part + 1) * d));
      out[p + ".self_attn" + b[part]] = slice(qkv_bias, part * d, (part + 1) * d);
    }
    out[p + ".self_attn.wo"] = transpose(src.take(h + ".attn.c_proj.weight", {d, d}));
    out[p + ".self_attn.bo"] = src.take(h + ".attn.c_proj.bias", {d});
    norm(src, out, h + ".ln_2", p + ".ffn_norm", d);
    out[p + ".ffn.w1"] = transpose(src.take(h + ".mlp.c_fc.weight", {d, f}));
    out[p + ".ffn.b1"] = src.take(h + ".mlp.c_fc.bias", {f});
    out[p + ".ffn.w2"] = transpose(src.take(h + ".mlp.c_proj.weight", {f, d}));
    out[p + ".ffn.b2"] = src.take(h + ".mlp.c_proj.bias", {d});
  }
  norm(src, out, "ln_f", "decoder.final_norm", d);
  if (c.output == OutputHead::Untied) out["output.weight"] = src.take("lm_head.weight", {c.vocab_size, d});
}

// attn.bias / attn.masked_bias are the causal-mask buffers older checkpoints saved; the
// engine builds its own mask. lm_head.weight is a copy of wte when tied (when untied,
// gpt2_params takes it, so it is not left over).
bool gpt2_mask_buffer(const std::string& name) {
  return name.ends_with(".attn.bias") || name.ends_with(".attn.masked_bias");
}

bool gpt2_skippable(const std::string& name) {
  return gpt2_mask_buffer(name) || name == "lm_head.weight";
}

}  // namespace

Family gpt2_family() {
  return {"gpt2", {"transformer."}, gpt2_config, gpt2_params, gpt2_skippable, gpt2_mask_buffer};
}

}  // namespace atlas::hf
