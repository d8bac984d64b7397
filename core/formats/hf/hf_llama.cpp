// Llama-family decoders from Hugging Face (transformers' modeling_llama.py and its relatives
// modeling_mistral.py, modeling_qwen2.py, modeling_gemma.py, modeling_phi3.py): pre-norm
// RMSNorm blocks, rotary positions with rotate_half pairing (dimension i with i + d_head/2),
// grouped-query attention, a SwiGLU (Gemma: GeGLU) feed-forward, no absolute positions.
// Weights are nn.Linear [out, in], the engine's own layout: nothing is transposed.
//   llama    LlamaForCausalLM (Llama 2/3, TinyLlama, SmolLM): attention_bias and mlp_bias
//            options, rope_scaling linear / dynamic / llama3
//   mistral  MistralForCausalLM: sliding_window
//   qwen2    Qwen2ForCausalLM: q, k, v biases (o has none), use_sliding_window refused
//   gemma    GemmaForCausalLM: norms scale by (1 + w), stored w: 1 is added here; embeddings
//            times sqrt(hidden_size); GeGLU (gelu_pytorch_tanh); tied output
//   phi3     Phi3ForCausalLM: fused qkv_proj [q | k | v] and gate_up_proj [gate | up] split
//            here; partial_rotary_factor
// Options that change the maths and are not implemented are refused by name, never ignored.
#include <cmath>
#include <string>

#include "core/formats/hf/hf_families.h"
#include "core/formats/packed_weights.h"

namespace atlas::hf {
namespace {

bool is(const ConfigReader& r, const char* model_type) {
  return r.j.value("model_type", std::string()) == model_type;
}

// rope_theta, rope_scaling and partial_rotary_factor -> the "rope" section.
RopeConfig rope_from(const ConfigReader& r, const ModelConfig& c) {
  RopeConfig rope;
  rope.theta = static_cast<float>(r.number("rope_theta", 10000.0));
  const double partial = r.number("partial_rotary_factor", 1.0);
  const double dims = double(c.d_head()) * partial;
  if (!(partial > 0 && partial <= 1) || dims != std::floor(dims) || int64_t(dims) % 2 != 0)
    r.refuse("partial_rotary_factor " + std::to_string(partial) + " does not give an even number "
             "of rotated dimensions of the " + std::to_string(c.d_head()) + "-dimensional heads");
  rope.rotary_dims = partial < 1 ? int64_t(dims) : 0;
  auto it = r.j.find("rope_scaling");
  if (it == r.j.end() || it->is_null()) return rope;
  if (!it->is_object()) r.refuse("rope_scaling must be an object or null, got " + it->dump());
  const ConfigReader s{*it, r.origin + " (rope_scaling)"};
  // transformers renamed "type" to "rope_type"; files carry either.
  const std::string type = s.string("rope_type", s.string("type", "default"));
  if (type == "default") return rope;
  rope.factor = static_cast<float>(s.number("factor", 1.0));
  if (!(rope.factor >= 1)) s.refuse("factor must be >= 1, got " + std::to_string(rope.factor));
  if (type == "linear") {
    rope.scaling = RopeScaling::Linear;
  } else if (type == "dynamic") {
    // transformers measures the input against max_position_embeddings here.
    rope.scaling = RopeScaling::Dynamic;
    rope.original_max_positions = c.max_positions;
  } else if (type == "llama3") {
    rope.scaling = RopeScaling::Llama3;
    rope.original_max_positions = s.required_integer("original_max_position_embeddings");
    rope.low_freq_factor = static_cast<float>(s.number("low_freq_factor", 1.0));
    rope.high_freq_factor = static_cast<float>(s.number("high_freq_factor", 4.0));
  } else {
    s.refuse("rope type \"" + type + "\" is not supported (default, linear, dynamic, llama3)");
  }
  return rope;
}

ModelConfig llama_config(const ConfigReader& r) {
  ModelConfig c;
  c.architecture = Architecture::Decoder;
  c.vocab_size = r.dimension("vocab_size", kMaxVocab);
  c.d_model = r.dimension("hidden_size", kMaxDModel);
  c.n_layers = r.dimension("num_hidden_layers", kMaxLayers);
  c.n_heads = r.dimension("num_attention_heads", kMaxHeads);
  c.d_ff = r.dimension("intermediate_size", kMaxDff);
  c.max_positions = r.integer("max_position_embeddings", 2048);
  // head_dim (Gemma 7B, Mistral NeMo) may differ from hidden_size / num_attention_heads.
  const int64_t head_dim = r.integer("head_dim", c.d_model % c.n_heads == 0 ? c.d_model / c.n_heads : 0);
  if (r.j.contains("head_dim") && !r.j["head_dim"].is_null() && (head_dim < 1 || head_dim > (1 << 16)))
    r.refuse("head_dim must be in 1 .. 65536, got " + std::to_string(head_dim));
  if (head_dim < 1)
    r.refuse("hidden_size " + std::to_string(c.d_model) + " is not a multiple of num_attention_heads " +
             std::to_string(c.n_heads) + " and there is no head_dim");
  if (head_dim * c.n_heads != c.d_model) c.attention.head_dim = head_dim;
  const int64_t kv = r.integer("num_key_value_heads", c.n_heads);
  c.attention.kv_heads = kv == c.n_heads ? 0 : kv;
  c.positional = Positional::Rotary;
  c.rope = rope_from(r, c);
  c.scale_embedding = false;
  c.norm = NormKind::RmsNorm;
  c.norm_position = NormPosition::Pre;
  c.norm_eps = static_cast<float>(r.number("rms_norm_eps", 1e-6));
  c.ffn.gated = true;
  c.activation = FfnActivation::Silu;
  const char* act_key = r.j.contains("hidden_activation") ? "hidden_activation" : "hidden_act";
  const std::string act = r.string(act_key, "silu");
  if (act == "gelu_pytorch_tanh" || act == "gelu_new" || act == "gelu_fast") {
    c.activation = FfnActivation::GeluTanh;
  } else if (act == "gelu") {
    // Gemma's config says "gelu" but its code ran the tanh form (transformers' Gemma fix).
    c.activation = is(r, "gemma") ? FfnActivation::GeluTanh : FfnActivation::Gelu;
  } else if (act != "silu" && act != "swish") {
    r.refuse(std::string(act_key) + " \"" + act + "\" is not supported (silu, gelu, gelu_pytorch_tanh)");
  }
  c.attention_bias = is(r, "qwen2") || r.boolean("attention_bias", false);
  c.ffn_bias = r.boolean("mlp_bias", false);
  const bool tied_default = is(r, "gemma");
  c.output = r.boolean("tie_word_embeddings", tied_default) ? OutputHead::Tied : OutputHead::Untied;
  if (is(r, "gemma")) c.scale_embedding = true;  // embeddings times sqrt(hidden_size)
  if (is(r, "qwen2") && r.boolean("use_sliding_window", false))
    r.refuse("use_sliding_window true (Qwen2's per-layer windows) is not supported");
  if (is(r, "mistral") || is(r, "phi3")) c.attention.sliding_window = r.integer("sliding_window", 0);
  // pretraining_tp only splits the same products across devices: the results are the same.
  return c;
}

void take_norm(TensorSource& src, ParamStore& out, const std::string& hf, const std::string& engine,
               int64_t d, bool plus_one) {
  Tensor w = src.take(hf + ".weight", {d});
  if (plus_one)  // Gemma scales by (1 + w): the engine's RMSNorm then uses w + 1
    for (float& v : w.data) v += 1.0f;
  out[engine + ".gamma"] = std::move(w);
}

Tensor rows(const Tensor& t, int64_t begin, int64_t end) {  // [a, b] -> [end - begin, b]
  if (t.packed) return packed_tensor(t.packed->row_range(begin, end));  // no bytes move
  Tensor r({end - begin, t.shape[1]});
  std::copy(t.data.begin() + begin * t.shape[1], t.data.begin() + end * t.shape[1], r.data.begin());
  return r;
}

// `gemma`: the norms are stored as w for (1 + w).
void take_params(const ModelConfig& c, TensorSource& src, ParamStore& out, bool gemma) {
  const int64_t d = c.d_model, f = c.d_ff, q = c.n_heads * c.d_head(), kv = c.kv_heads() * c.d_head();
  const bool fused = src.has("layers.0.self_attn.qkv_proj.weight");  // Phi-3
  out["embed.tokens"] = src.take("embed_tokens.weight", {c.vocab_size, d});
  for (int64_t i = 0; i < c.n_layers; ++i) {
    const std::string h = "layers." + std::to_string(i), p = "decoder.layer" + std::to_string(i);
    const std::string a = p + ".self_attn", m = p + ".ffn";
    take_norm(src, out, h + ".input_layernorm", p + ".self_attn_norm", d, gemma);
    if (fused) {
      const Tensor qkv = src.take(h + ".self_attn.qkv_proj.weight", {q + 2 * kv, d});
      out[a + ".wq"] = rows(qkv, 0, q);
      out[a + ".wk"] = rows(qkv, q, q + kv);
      out[a + ".wv"] = rows(qkv, q + kv, q + 2 * kv);
    } else {
      out[a + ".wq"] = src.take(h + ".self_attn.q_proj.weight", {q, d});
      out[a + ".wk"] = src.take(h + ".self_attn.k_proj.weight", {kv, d});
      out[a + ".wv"] = src.take(h + ".self_attn.v_proj.weight", {kv, d});
    }
    out[a + ".wo"] = src.take(h + ".self_attn.o_proj.weight", {d, q});
    if (c.attention_bias) {
      out[a + ".bq"] = src.take(h + ".self_attn.q_proj.bias", {q});
      out[a + ".bk"] = src.take(h + ".self_attn.k_proj.bias", {kv});
      out[a + ".bv"] = src.take(h + ".self_attn.v_proj.bias", {kv});
      // Qwen2's o_proj has no bias; Llama's attention_bias covers o_proj too.
      out[a + ".bo"] = src.has(h + ".self_attn.o_proj.bias") ? src.take(h + ".self_attn.o_proj.bias", {d})
                                                              : Tensor({d});
    }
    take_norm(src, out, h + ".post_attention_layernorm", p + ".ffn_norm", d, gemma);
    if (fused) {
      const Tensor gate_up = src.take(h + ".mlp.gate_up_proj.weight", {2 * f, d});
      out[m + ".w1"] = rows(gate_up, 0, f);
      out[m + ".w3"] = rows(gate_up, f, 2 * f);
    } else {
      out[m + ".w1"] = src.take(h + ".mlp.gate_proj.weight", {f, d});
      out[m + ".w3"] = src.take(h + ".mlp.up_proj.weight", {f, d});
    }
    out[m + ".w2"] = src.take(h + ".mlp.down_proj.weight", {d, f});
    if (c.ffn_bias) {
      out[m + ".b1"] = src.take(h + ".mlp.gate_proj.bias", {f});
      out[m + ".b3"] = src.take(h + ".mlp.up_proj.bias", {f});
      out[m + ".b2"] = src.take(h + ".mlp.down_proj.bias", {d});
    }
  }
  take_norm(src, out, "norm", "decoder.final_norm", d, gemma);
  // A tied checkpoint may still carry lm_head.weight (a copy): skipped by llama_skippable.
  if (c.output == OutputHead::Untied) out["output.weight"] = src.take("lm_head.weight", {c.vocab_size, d});
}

void llama_params(ModelConfig& c, TensorSource& src, ParamStore& out) { take_params(c, src, out, false); }
void gemma_params(ModelConfig& c, TensorSource& src, ParamStore& out) { take_params(c, src, out, true); }

// rotary_emb.inv_freq: a buffer older checkpoints saved (the engine computes the frequencies);
// lm_head.weight: a copy of the embedding when tied (taken when untied, so not left over).
bool llama_skippable(const std::string& name) {
  return name.ends_with(".rotary_emb.inv_freq") || name == "lm_head.weight";
}

// The matrices of the products and the embedding stay in the checkpoint's F16 / BF16: an 8B
// BF16 folder would need 32 GB as float32. Norm weights (vectors) are converted (Gemma adds 1).
bool llama_keep_encoded(const std::string& name) {
  return name.find("_proj.weight") != std::string::npos ||
         name.find("embed_tokens.weight") != std::string::npos || name == "lm_head.weight";
}

Family family(const char* model_type) {
  return {model_type, {"model."}, llama_config,
          std::string(model_type) == "gemma" ? gemma_params : llama_params, llama_skippable,
          nullptr, llama_keep_encoded};
}

}  // namespace

std::vector<Family> llama_families() {
  return {family("llama"), family("mistral"), family("qwen2"), family("gemma"), family("phi3")};
}

}  // namespace atlas::hf
