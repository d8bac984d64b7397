#include "core/formats/gguf_model.h"

#include <cmath>
#include <filesystem>
#include <set>

#include "core/config/config_limits.h"
#include "core/formats/gguf_tokenizer.h"
#include "core/formats/input_file.h"
#include "core/formats/packed_weights.h"
#include "core/model/memory_budget.h"
#include "core/tensor/error.h"
#include "core/variants/rotary/rope.h"

namespace atlas {

namespace {

const char* const kArchitectures[] = {"llama", "qwen2", "gemma", "phi3"};

[[noreturn]] void fail(const GgufFile& f, const std::string& message) {
  throw AtlasError(f.origin() + ": " + message);
}

bool has_tensor(const GgufFile& f, const std::string& name) {
  for (const GgufTensorInfo& t : f.tensors())
    if (t.name == name) return true;
  return false;
}

// llama.cpp's converter writes Llama 3.1's scaled frequencies as divisors per frequency
// (rope_freqs.weight, w_i / f_i). They are the llama3 rule with Meta's constants (low 1,
// high 4, original context 8192) and factor max_i f_i; anything else is refused rather than
// approximated.
void recognise_llama3_factors(const GgufFile& f, ModelConfig& c) {
  const Tensor factors = f.read_tensor("rope_freqs.weight");
  float factor = 1;
  for (float v : factors.data) factor = std::max(factor, v);
  ModelConfig plain = c;
  plain.rope.scaling = RopeScaling::None;
  ModelConfig scaled = c;
  scaled.rope.scaling = RopeScaling::Llama3;
  scaled.rope.factor = factor;
  scaled.rope.original_max_positions = 8192;
  scaled.rope.low_freq_factor = 1;
  scaled.rope.high_freq_factor = 4;
  const std::vector<float> w = rope_frequencies(plain, 1), w3 = rope_frequencies(scaled, 1);
  bool same = factors.numel() == int64_t(w.size());
  for (size_t i = 0; same && i < w.size(); ++i)
    same = std::abs(double(w[i]) / factors.data[i] - w3[i]) <= 1e-4 * w[i];
  if (!same)
    fail(f, "rope_freqs.weight holds frequency factors that are not Llama 3's llama3 scaling "
            "(low 1, high 4, context 8192); such files are not supported");
  c.rope = scaled.rope;
}

}  // namespace

ModelConfig gguf_model_config(const GgufFile& f, const GgufLoadOptions& options) {
  const std::string arch = f.get_string("general.architecture");
  bool known = false;
  for (const char* a : kArchitectures) known = known || arch == a;
  if (!known)
    fail(f, "general.architecture \"" + arch + "\" is not supported (llama, qwen2, gemma, phi3)");
  auto key = [&](const std::string& k) { return arch + "." + k; };
  ModelConfig c;
  c.name = f.get_string_or("general.name", std::filesystem::path(f.origin()).stem().string());
  c.description = "GGUF " + arch + " model";
  c.architecture = Architecture::Decoder;
  // The sizes within the engine's limits before any arithmetic uses them.
  auto dimension = [&](const std::string& k, int64_t max) {
    const int64_t v = f.get_int(key(k));
    if (v < 1 || v > max)
      fail(f, key(k) + " is " + std::to_string(v) + ", out of range: it must be from 1 to " +
                  std::to_string(max));
    return v;
  };
  c.d_model = dimension("embedding_length", kMaxDModel);
  c.n_layers = dimension("block_count", kMaxLayers);
  c.n_heads = dimension("attention.head_count", kMaxHeads);
  c.d_ff = dimension("feed_forward_length", kMaxDff);
  c.max_positions = f.get_int_or(key("context_length"), 2048);
  const GgufTensorInfo& embedding = f.tensor("token_embd.weight");
  if (embedding.shape.size() != 2 || embedding.shape[1] != c.d_model)
    fail(f, "token_embd.weight has shape " + shape_str(embedding.shape) + ", expected [vocab, " +
                std::to_string(c.d_model) + "]");
  c.vocab_size = embedding.shape[0];
  // attention.key_length (Gemma 7B, Mistral NeMo) may differ from embedding_length / head_count.
  const int64_t head_dim =
      f.get_int_or(key("attention.key_length"), c.d_model % c.n_heads == 0 ? c.d_model / c.n_heads : 0);
  if (head_dim < 1 || head_dim > (int64_t{1} << 16))
    fail(f, key("embedding_length") + " " + std::to_string(c.d_model) + " is not a multiple of " +
                key("attention.head_count") + " " + std::to_string(c.n_heads) + " and " +
                key("attention.key_length") + " does not give the head width");
  if (f.get_int_or(key("attention.value_length"), head_dim) != head_dim)
    fail(f, key("attention.value_length") + " differs from " + key("attention.key_length") +
                "; heads whose values are wider than their keys are not supported");
  if (head_dim * c.n_heads != c.d_model) c.attention.head_dim = head_dim;
  const int64_t kv = f.get_int_or(key("attention.head_count_kv"), c.n_heads);
  c.attention.kv_heads = kv == c.n_heads ? 0 : kv;

  c.positional = Positional::Rotary;
  c.rope.theta = static_cast<float>(f.get_float_or(key("rope.freq_base"), 10000.0));
  const int64_t rotary = f.get_int_or(key("rope.dimension_count"), c.d_head());
  c.rope.rotary_dims = rotary == c.d_head() ? 0 : rotary;
  c.rope.pairing = arch == "llama" ? RopePairing::Adjacent : RopePairing::Half;
  const std::string scaling = f.get_string_or(key("rope.scaling.type"), "none");
  if (scaling == "linear") {
    c.rope.scaling = RopeScaling::Linear;
    c.rope.factor = static_cast<float>(f.get_float(key("rope.scaling.factor")));
  } else if (scaling != "none") {
    fail(f, key("rope.scaling.type") + " \"" + scaling + "\" is not supported (none, linear)");
  }
  if (f.has(key("attention.sliding_window")) && arch != "phi3")
    c.attention.sliding_window = f.get_int(key("attention.sliding_window"));

  c.norm = NormKind::RmsNorm;
  c.norm_position = NormPosition::Pre;
  c.norm_eps = static_cast<float>(f.get_float_or(key("attention.layer_norm_rms_epsilon"), 1e-5));
  c.ffn.gated = true;
  c.activation = arch == "gemma" ? FfnActivation::GeluTanh : FfnActivation::Silu;
  c.scale_embedding = arch == "gemma";  // embeddings times sqrt(d)
  c.attention_bias = has_tensor(f, "blk.0.attn_q.bias");
  c.ffn_bias = false;
  c.output = has_tensor(f, "output.weight") ? OutputHead::Untied : OutputHead::Tied;
  if (has_tensor(f, "rope_freqs.weight")) recognise_llama3_factors(f, c);
  if (options.tokenizer) c.tokenizer = tokenizer_from_gguf(f);
  validate_config(c, f.origin());
  return c;
}

HeldPlan gguf_held_plan(const GgufFile& f) {
  // What the loader below holds: matrices as stored (their bytes), vectors as float32.
  HeldPlan plan;
  for (const GgufTensorInfo& t : f.tensors()) {
    if (t.shape.size() >= 2) plan.tensors.push_back({t.name, t.shape, t.type_name, double(t.n_bytes)});
    else plan.tensors.push_back({t.name, t.shape, "F32", 4.0 * double(t.numel)});
  }
  return plan;
}

ModelHeader read_gguf_model_header(const std::string& path, const GgufLoadOptions& options) {
  const GgufFile f = GgufFile::open_header(path);
  ModelHeader h;
  h.config = gguf_model_config(f, options);
  h.held = gguf_held_plan(f);
  h.origin = f.origin();
  h.advice = kQuantizeAdvice;
  return h;
}

Model load_gguf_model(const std::string& path, const GgufLoadOptions& options) {
  const GgufFile f = GgufFile::open(path);
  ModelConfig c = gguf_model_config(f, options);
  const HeldPlan plan = gguf_held_plan(f);
  check_weights_memory(plan.bytes(), f.origin(), plan.detail());
  std::set<std::string> used = {"rope_freqs.weight"};
  // Matrices stay as the file holds them (quantized, 16-bit or float32), read in place from the
  // mapping; vectors (norms, biases) are converted to float32.
  auto take = [&](const std::string& name) {
    used.insert(name);
    const GgufTensorInfo& t = f.tensor(name);  // throws, naming the file and the tensor
    if (t.shape.size() < 2) return f.read_tensor(name);
    Tensor m = packed_tensor(f.read_packed(name));
    m.shape = t.shape;  // as the file gives it (a 3-D tensor is refused by the shape check)
    return m;
  };
  auto rows = [](const Tensor& t, int64_t begin, int64_t end) {
    return packed_tensor(t.packed->row_range(begin, end));
  };
  const int64_t d = c.d_model, ff = c.d_ff, q = c.attention_width(), kv = c.kv_heads() * c.d_head();
  ParamStore p;
  p["embed.tokens"] = take("token_embd.weight");
  for (int64_t i = 0; i < c.n_layers; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".", e = "decoder.layer" + std::to_string(i);
    p[e + ".self_attn_norm.gamma"] = take(b + "attn_norm.weight");
    if (has_tensor(f, b + "attn_qkv.weight")) {  // Phi-3: [q | k | v] rows
      const Tensor qkv = take(b + "attn_qkv.weight");
      if (qkv.shape.size() != 2 || qkv.shape[0] != q + 2 * kv)
        fail(f, b + "attn_qkv.weight has shape " + shape_str(qkv.shape) + ", expected [" +
                    std::to_string(q + 2 * kv) + ", " + std::to_string(d) + "]");
      p[e + ".self_attn.wq"] = rows(qkv, 0, q);
      p[e + ".self_attn.wk"] = rows(qkv, q, q + kv);
      p[e + ".self_attn.wv"] = rows(qkv, q + kv, q + 2 * kv);
      const Tensor up = take(b + "ffn_up.weight");  // Phi-3: [gate | up] rows
      if (up.shape.size() != 2 || up.shape[0] != 2 * ff)
        fail(f, b + "ffn_up.weight has shape " + shape_str(up.shape) + ", expected [" +
                    std::to_string(2 * ff) + ", " + std::to_string(d) + "] (gate and up)");
      p[e + ".ffn.w1"] = rows(up, 0, ff);
      p[e + ".ffn.w3"] = rows(up, ff, 2 * ff);
    } else {
      Tensor wq = take(b + "attn_q.weight");
      if (wq.shape.size() != 2 || wq.shape[0] != q)  // the head layout the metadata gives
        fail(f, b + "attn_q.weight has shape " + shape_str(wq.shape) + ", but " + std::to_string(c.n_heads) +
                    " heads (attention.head_count) of " + std::to_string(c.d_head()) +
                    " (attention.key_length) need " + std::to_string(q) + " rows");
      p[e + ".self_attn.wq"] = std::move(wq);
      p[e + ".self_attn.wk"] = take(b + "attn_k.weight");
      p[e + ".self_attn.wv"] = take(b + "attn_v.weight");
      p[e + ".ffn.w1"] = take(b + "ffn_gate.weight");
      p[e + ".ffn.w3"] = take(b + "ffn_up.weight");
    }
    p[e + ".self_attn.wo"] = take(b + "attn_output.weight");
    if (c.attention_bias) {
      p[e + ".self_attn.bq"] = take(b + "attn_q.bias");
      p[e + ".self_attn.bk"] = take(b + "attn_k.bias");
      p[e + ".self_attn.bv"] = take(b + "attn_v.bias");
      p[e + ".self_attn.bo"] = has_tensor(f, b + "attn_output.bias") ? take(b + "attn_output.bias")
                                                                      : Tensor({d});  // Qwen2: none
    }
    p[e + ".ffn_norm.gamma"] = take(b + "ffn_norm.weight");
    p[e + ".ffn.w2"] = take(b + "ffn_down.weight");
  }
  p["decoder.final_norm.gamma"] = take("output_norm.weight");
  if (c.output == OutputHead::Untied) p["output.weight"] = take("output.weight");
  for (const GgufTensorInfo& t : f.tensors())
    if (!used.count(t.name))
      fail(f, "unexpected tensor \"" + t.name + "\" for a " + f.get_string("general.architecture") +
                  " model (this loader would ignore it, so the model would not be the file's)");
  check_param_shapes(c, p, f.origin());  // every shape against the config, naming the tensor
  // Everything above only maps the file; the scan of every weight's pages is the load's time.
  return Model(std::move(c), std::move(p), options.monitor);
}

}  // namespace atlas
