// Llama-family checkpoints in Hugging Face's exact layout (model.layers.N.self_attn.q_proj,
// mlp.gate_proj, input_layernorm, ...; Phi-3's fused qkv_proj and gate_up_proj; Gemma's norms
// stored as w for 1 + w) against a naive double-precision decoder written here from
// transformers' modeling_llama.py: rotate_half RoPE over cat(freqs, freqs), repeat_kv heads,
// an additive causal (and sliding-window) mask, RMSNorm, the gated MLP. Logits and every
// attention map are compared; F32, BF16 and sharded files are covered, and bad configs.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/formats/hf/hf_checkpoint.h"
#include "core/model/model.h"
#include "core/tensor/error.h"
#include "tests/core/hf_test_util.h"

using namespace atlas;
using namespace hf_test;
using Catch::Matchers::Contains;

namespace {

struct LlamaArch {
  std::string model_type = "llama";
  int64_t vocab = 260, d = 16, layers = 2, heads = 4, kv_heads = 2, ff = 24, ctx = 64;
  double theta = 10000, eps = 1e-6, partial = 1.0;
  bool tied = false, qkv_bias = false, o_bias = false, fused = false, gemma = false;
  int64_t window = 0;
  std::string act = "silu";
  nlohmann::json rope_scaling;  // null: none
  std::string dtype = "F32";
  bool sharded = false;
  int64_t head_dim = 0;  // written as config.json's head_dim when set (Gemma 7B, Mistral NeMo)
  int64_t dh() const { return head_dim > 0 ? head_dim : d / heads; }
};

HfTensors tensors_of(const LlamaArch& a) {
  HfTensors t;
  uint32_t seed = 1;
  auto add = [&](const std::string& n, std::vector<int64_t> shape, float scale = 1.0f) {
    t["model." + n] = pattern(std::move(shape), seed++, scale);
  };
  const int64_t q = a.heads * a.dh(), kv = a.kv_heads * a.dh();
  add("embed_tokens.weight", {a.vocab, a.d}, 4.0f);
  for (int64_t i = 0; i < a.layers; ++i) {
    const std::string h = "layers." + std::to_string(i);
    add(h + ".input_layernorm.weight", {a.d}, 3.0f);
    if (a.fused) {
      add(h + ".self_attn.qkv_proj.weight", {q + 2 * kv, a.d}, 3.0f);
    } else {
      add(h + ".self_attn.q_proj.weight", {q, a.d}, 3.0f);
      add(h + ".self_attn.k_proj.weight", {kv, a.d}, 3.0f);
      add(h + ".self_attn.v_proj.weight", {kv, a.d});
    }
    if (a.qkv_bias) {
      add(h + ".self_attn.q_proj.bias", {q});
      add(h + ".self_attn.k_proj.bias", {kv});
      add(h + ".self_attn.v_proj.bias", {kv});
    }
    add(h + ".self_attn.o_proj.weight", {a.d, q});
    if (a.o_bias) add(h + ".self_attn.o_proj.bias", {a.d});
    add(h + ".post_attention_layernorm.weight", {a.d}, 3.0f);
    if (a.fused) {
      add(h + ".mlp.gate_up_proj.weight", {2 * a.ff, a.d}, 2.0f);
    } else {
      add(h + ".mlp.gate_proj.weight", {a.ff, a.d}, 2.0f);
      add(h + ".mlp.up_proj.weight", {a.ff, a.d}, 2.0f);
    }
    add(h + ".mlp.down_proj.weight", {a.d, a.ff});
    t["model." + h + ".self_attn.rotary_emb.inv_freq"] = HfTensor{{a.dh() / 2}, std::vector<float>(size_t(a.dh() / 2), 1.0f)};
  }
  add("norm.weight", {a.d}, 3.0f);
  if (!a.tied) t["lm_head.weight"] = pattern({a.vocab, a.d}, seed++);
  return t;
}

nlohmann::json config_of(const LlamaArch& a) {
  nlohmann::json j = {{"model_type", a.model_type}, {"vocab_size", a.vocab}, {"hidden_size", a.d},
                      {"num_hidden_layers", a.layers}, {"num_attention_heads", a.heads},
                      {"num_key_value_heads", a.kv_heads}, {"intermediate_size", a.ff},
                      {"max_position_embeddings", a.ctx}, {"rms_norm_eps", a.eps},
                      {"rope_theta", a.theta}, {"tie_word_embeddings", a.tied},
                      {"hidden_act", a.act}, {"rope_scaling", a.rope_scaling}};
  if (a.model_type == "llama") j["attention_bias"] = a.qkv_bias && a.o_bias;
  if (a.window > 0) j["sliding_window"] = a.window;
  if (a.partial < 1) j["partial_rotary_factor"] = a.partial;
  if (a.head_dim > 0) j["head_dim"] = a.head_dim;
  return j;
}

fs::path write_llama_dir(const LlamaArch& a, const std::string& name) {
  fs::path dir = fresh_dir(name);
  write_text(dir / "config.json", config_of(a).dump());
  const HfTensors all = tensors_of(a);
  if (!a.sharded) {
    write_safetensors_file(dir / "model.safetensors", all, a.dtype);
    return dir;
  }
  HfTensors first, second;
  nlohmann::json map = nlohmann::json::object();
  for (const auto& [n, t] : all) {
    const bool one = n.find("layers.1.") == std::string::npos;
    (one ? first : second)[n] = t;
    map[n] = one ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors";
  }
  write_safetensors_file(dir / "model-00001-of-00002.safetensors", first, a.dtype);
  write_safetensors_file(dir / "model-00002-of-00002.safetensors", second, a.dtype);
  write_text(dir / "model.safetensors.index.json", nlohmann::json({{"weight_map", map}}).dump());
  return dir;
}

// ---- the naive decoder, in transformers' formulation ----------------------------------------

Matrix matmul_t(const Matrix& x, const HfTensor& w, int64_t row0, int64_t rows, const HfTensor* b) {
  Matrix y(x.size(), std::vector<double>(size_t(rows), 0.0));
  const int64_t in = w.shape[1];
  for (size_t i = 0; i < x.size(); ++i)
    for (int64_t o = 0; o < rows; ++o) {
      double s = b ? b->data[size_t(o)] : 0.0;
      for (int64_t k = 0; k < in; ++k) s += x[i][size_t(k)] * w.at(row0 + o, k);
      y[i][size_t(o)] = s;
    }
  return y;
}

Matrix rms_norm(const Matrix& x, const HfTensor& w, const LlamaArch& a) {
  Matrix y = x;
  for (auto& row : y) {
    double ms = 0;
    for (double v : row) ms += v * v;
    ms /= double(row.size());
    for (size_t k = 0; k < row.size(); ++k)  // Gemma: * (1 + w)
      row[k] = row[k] / std::sqrt(ms + a.eps) * ((a.gemma ? 1.0 : 0.0) + w.data[k]);
  }
  return y;
}

std::vector<double> inv_freq(const LlamaArch& a, int64_t r) {
  std::vector<double> f;
  for (int64_t i = 0; i < r; i += 2) f.push_back(1.0 / std::pow(a.theta, double(i) / double(r)));
  if (!a.rope_scaling.is_null() && a.rope_scaling["rope_type"] == "llama3") {
    const double factor = a.rope_scaling["factor"], low = a.rope_scaling["low_freq_factor"],
                 high = a.rope_scaling["high_freq_factor"],
                 old = a.rope_scaling["original_max_position_embeddings"];
    for (double& v : f) {  // transformers' _compute_llama3_parameters, element by element
      const double wavelen = 2 * M_PI / v;
      const double scaled = wavelen > old / low ? v / factor : v;
      const double smooth = (old / wavelen - low) / (high - low);
      const bool medium = !(wavelen < old / high) && !(wavelen > old / low);
      v = medium ? (1 - smooth) * scaled / factor + smooth * scaled : scaled;
    }
  }
  return f;
}

// q * cos + rotate_half(q) * sin on the first r dims of each head, emb = cat(freqs, freqs).
void apply_rope(Matrix& x, int64_t heads, const LlamaArch& a) {
  const int64_t dh = a.dh(), r = int64_t(double(dh) * a.partial);
  const std::vector<double> f = inv_freq(a, r);
  for (size_t pos = 0; pos < x.size(); ++pos)
    for (int64_t h = 0; h < heads; ++h) {
      std::vector<double> head(x[pos].begin() + h * dh, x[pos].begin() + h * dh + r);
      std::vector<double> out(static_cast<size_t>(r));
      for (int64_t k = 0; k < r; ++k) {
        const double angle = double(pos) * f[size_t(k % (r / 2))];
        const double rotated = k < r / 2 ? -head[size_t(k + r / 2)] : head[size_t(k - r / 2)];
        out[size_t(k)] = head[size_t(k)] * std::cos(angle) + rotated * std::sin(angle);
      }
      std::copy(out.begin(), out.end(), x[pos].begin() + h * dh);
    }
}

double act(double v, const LlamaArch& a) {
  if (a.act == "silu") return v / (1 + std::exp(-v));
  return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
}

struct HfLlamaOracle {
  Matrix logits;
  std::vector<std::vector<Matrix>> attn;  // [layer][head][i][j]
};

HfLlamaOracle naive_forward(const LlamaArch& a, const HfTensors& t, const std::vector<int>& ids) {
  auto T = [&](const std::string& n) -> const HfTensor& { return t.at("model." + n); };
  const int64_t L = int64_t(ids.size()), dh = a.dh(), q = a.heads * dh, kv = a.kv_heads * dh;
  Matrix x(size_t(L), std::vector<double>(size_t(a.d)));
  for (int64_t i = 0; i < L; ++i)
    for (int64_t k = 0; k < a.d; ++k)
      x[size_t(i)][size_t(k)] = T("embed_tokens.weight").at(ids[size_t(i)], k) * (a.gemma ? std::sqrt(float(a.d)) : 1.0);
  HfLlamaOracle out;
  for (int64_t l = 0; l < a.layers; ++l) {
    const std::string h = "layers." + std::to_string(l) + ".";
    const Matrix n = rms_norm(x, T(h + "input_layernorm.weight"), a);
    auto bias = [&](const std::string& name) { return t.count("model." + h + name) ? &T(h + name) : nullptr; };
    Matrix Q, K, V;
    if (a.fused) {
      const HfTensor& w = T(h + "self_attn.qkv_proj.weight");
      Q = matmul_t(n, w, 0, q, nullptr);
      K = matmul_t(n, w, q, kv, nullptr);
      V = matmul_t(n, w, q + kv, kv, nullptr);
    } else {
      Q = matmul_t(n, T(h + "self_attn.q_proj.weight"), 0, q, bias("self_attn.q_proj.bias"));
      K = matmul_t(n, T(h + "self_attn.k_proj.weight"), 0, kv, bias("self_attn.k_proj.bias"));
      V = matmul_t(n, T(h + "self_attn.v_proj.weight"), 0, kv, bias("self_attn.v_proj.bias"));
    }
    apply_rope(Q, a.heads, a);
    apply_rope(K, a.kv_heads, a);
    Matrix concat(size_t(L), std::vector<double>(size_t(q), 0.0));
    std::vector<Matrix> maps;
    for (int64_t hd = 0; hd < a.heads; ++hd) {
      const int64_t g = hd / (a.heads / a.kv_heads);  // repeat_kv
      Matrix p(size_t(L), std::vector<double>(size_t(L), 0.0));
      for (int64_t i = 0; i < L; ++i) {
        double mx = -INFINITY;
        std::vector<double> s(size_t(L), -INFINITY);
        for (int64_t j = 0; j <= i; ++j) {
          if (a.window > 0 && i - j >= a.window) continue;
          double dot = 0;
          for (int64_t k = 0; k < dh; ++k) dot += Q[size_t(i)][size_t(hd * dh + k)] * K[size_t(j)][size_t(g * dh + k)];
          s[size_t(j)] = dot / std::sqrt(double(dh));
          mx = std::max(mx, s[size_t(j)]);
        }
        double z = 0;
        for (int64_t j = 0; j < L; ++j) z += std::isinf(s[size_t(j)]) ? 0 : std::exp(s[size_t(j)] - mx);
        for (int64_t j = 0; j < L; ++j) p[size_t(i)][size_t(j)] = std::isinf(s[size_t(j)]) ? 0 : std::exp(s[size_t(j)] - mx) / z;
        for (int64_t k = 0; k < dh; ++k) {
          double o = 0;
          for (int64_t j = 0; j < L; ++j) o += p[size_t(i)][size_t(j)] * V[size_t(j)][size_t(g * dh + k)];
          concat[size_t(i)][size_t(hd * dh + k)] = o;
        }
      }
      maps.push_back(p);
    }
    out.attn.push_back(maps);
    const Matrix o =
        matmul_t(concat, T(h + "self_attn.o_proj.weight"), 0, a.d, bias("self_attn.o_proj.bias"));
    for (int64_t i = 0; i < L; ++i)
      for (int64_t k = 0; k < a.d; ++k) x[size_t(i)][size_t(k)] += o[size_t(i)][size_t(k)];
    const Matrix m = rms_norm(x, T(h + "post_attention_layernorm.weight"), a);
    Matrix gate, up;
    if (a.fused) {
      gate = matmul_t(m, T(h + "mlp.gate_up_proj.weight"), 0, a.ff, nullptr);
      up = matmul_t(m, T(h + "mlp.gate_up_proj.weight"), a.ff, a.ff, nullptr);
    } else {
      gate = matmul_t(m, T(h + "mlp.gate_proj.weight"), 0, a.ff, nullptr);
      up = matmul_t(m, T(h + "mlp.up_proj.weight"), 0, a.ff, nullptr);
    }
    for (size_t i = 0; i < gate.size(); ++i)
      for (size_t k = 0; k < gate[i].size(); ++k) gate[i][k] = act(gate[i][k], a) * up[i][k];
    const Matrix down = matmul_t(gate, T(h + "mlp.down_proj.weight"), 0, a.d, nullptr);
    for (int64_t i = 0; i < L; ++i)
      for (int64_t k = 0; k < a.d; ++k) x[size_t(i)][size_t(k)] += down[size_t(i)][size_t(k)];
  }
  x = rms_norm(x, T("norm.weight"), a);
  out.logits = matmul_t(x, a.tied ? T("embed_tokens.weight") : t.at("lm_head.weight"), 0, a.vocab, nullptr);
  return out;
}

void check_folder_against_naive(const LlamaArch& a, const std::string& name) {
  const fs::path dir = write_llama_dir(a, name);
  HfLoadOptions no_tokenizer;
  no_tokenizer.tokenizer = false;  // the ids below are given directly
  const Model model = load_hf_directory(dir.string(), no_tokenizer);
  const std::vector<int> ids = {3, 170, 5, 5, 9, 30, 259, 170, 8, 1, 39, 0};
  std::vector<TokenInfo> tokens;
  for (int id : ids) tokens.push_back({id, std::to_string(id)});
  const RunResult r = model.forward(tokens, {}, RunOptions{});
  // The oracle reads the values the file holds: BF16 keeps 8 significant bits.
  HfTensors held = tensors_of(a);
  if (a.dtype == "BF16")
    for (auto& [n, t] : held)
      for (float& v : t.data) {
        const uint32_t bits = uint32_t(to_bf16(v)) << 16;
        std::memcpy(&v, &bits, 4);
      }
  const HfLlamaOracle want = naive_forward(a, held, ids);
  double scale = 1, worst = 0;
  for (const auto& row : want.logits)
    for (double v : row) scale = std::max(scale, std::abs(v));
  for (size_t i = 0; i < want.logits.size(); ++i)
    for (size_t k = 0; k < want.logits[i].size(); ++k)
      worst = std::max(worst, std::abs(want.logits[i][k] - r.output.data[i * size_t(a.vocab) + k]));
  INFO(name << ": logits worst " << worst << " of scale " << scale);
  CHECK(worst <= 1e-4 * scale);
  for (int64_t l = 0; l < a.layers; ++l) {
    const TracedArray* got = r.trace.find("decoder.layer" + std::to_string(l) + ".self_attn");
    REQUIRE(got);
    double err = 0;
    for (int64_t h = 0; h < a.heads; ++h)
      for (size_t i = 0; i < ids.size(); ++i)
        for (size_t j = 0; j < ids.size(); ++j)
          err = std::max(err, std::abs(want.attn[size_t(l)][size_t(h)][i][j] -
                                       got->tensor.data[(size_t(h) * ids.size() + i) * ids.size() + j]));
    INFO(name << " layer " << l << ": attention worst " << err);
    CHECK(err <= 1e-4);
  }
  fs::remove_all(dir);
}

}  // namespace

TEST_CASE("Llama-family HF folders match a naive decoder: logits and every attention map", "[hf][llama]") {
  SECTION("llama: GQA 4 on 2, untied head") { check_folder_against_naive(LlamaArch{}, "llama"); }
  SECTION("llama 3: llama3 rope scaling, biases, tied, BF16 weights") {
    LlamaArch a;
    a.theta = 500000;
    a.rope_scaling = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                      {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 32}};
    a.qkv_bias = a.o_bias = true;
    a.tied = true;
    a.dtype = "BF16";
    check_folder_against_naive(a, "llama3");
  }
  SECTION("mistral: sliding window of 4, multi-query (1 key/value head), sharded") {
    LlamaArch a;
    a.model_type = "mistral";
    a.kv_heads = 1;
    a.window = 4;
    a.sharded = true;
    check_folder_against_naive(a, "mistral");
  }
  SECTION("qwen2: q, k, v biases and none on o, tied, F16") {
    LlamaArch a;
    a.model_type = "qwen2";
    a.qkv_bias = true;
    a.tied = true;
    a.theta = 1000000;
    a.dtype = "F16";
    check_folder_against_naive(a, "qwen2");
  }
  SECTION("gemma: (1 + w) norms, sqrt(d) embedding scale, GeGLU, tied") {
    LlamaArch a;
    a.model_type = "gemma";
    a.gemma = true;
    a.tied = true;
    a.act = "gelu_pytorch_tanh";
    a.kv_heads = 4;
    check_folder_against_naive(a, "gemma");
  }
  SECTION("gemma 7B's layout: heads wider than hidden_size / heads (4 x 8 over d 16)") {
    LlamaArch a;
    a.model_type = "gemma";
    a.gemma = true;
    a.tied = true;
    a.act = "gelu_pytorch_tanh";
    a.kv_heads = 4;
    a.head_dim = 8;
    check_folder_against_naive(a, "gemma-wide-heads");
  }
  SECTION("mistral NeMo's layout: narrower heads (4 x 2 over d 16), grouped 2:1") {
    LlamaArch a;
    a.model_type = "mistral";
    a.head_dim = 2;
    check_folder_against_naive(a, "mistral-narrow-heads");
  }
  SECTION("phi3: fused qkv_proj and gate_up_proj, half the head dims rotate") {
    LlamaArch a;
    a.model_type = "phi3";
    a.fused = true;
    a.partial = 0.5;
    a.kv_heads = 4;
    check_folder_against_naive(a, "phi3");
  }
}

TEST_CASE("Llama-family configs that change the maths are refused by name", "[hf][llama][errors]") {
  auto refused = [](LlamaArch a, const std::function<void(nlohmann::json&)>& edit) {
    const fs::path dir = write_llama_dir(a, "llama-bad");
    nlohmann::json j = config_of(a);
    edit(j);
    write_text(dir / "config.json", j.dump());
    HfLoadOptions o;
    o.tokenizer = false;
    std::string message;
    try {
      load_hf_directory(dir.string(), o);
    } catch (const AtlasError& e) {
      message = e.what();
    }
    fs::remove_all(dir);
    return message;
  };
  CHECK_THAT(refused(LlamaArch{},
                     [](auto& j) {
                       j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
                     }),
             Contains("config.json (rope_scaling): rope type \"yarn\" is not supported"));
  // A head_dim the weights do not have: the projection's shape names the mismatch.
  CHECK_THAT(refused(LlamaArch{}, [](auto& j) { j["head_dim"] = 8; }), Contains("q_proj.weight"));
  CHECK_THAT(refused(LlamaArch{}, [](auto& j) { j["head_dim"] = -4; }),
             Contains("head_dim must be in 1 .. 65536, got -4"));
  CHECK_THAT(refused(LlamaArch{}, [](auto& j) { j["head_dim"] = 1 << 20; }), Contains("head_dim"));
  CHECK_THAT(refused(LlamaArch{}, [](auto& j) { j["num_key_value_heads"] = 3; }),
             Contains("attention.kv_heads must divide n_heads (4), got 3"));
  CHECK_THAT(refused(LlamaArch{}, [](auto& j) { j["hidden_act"] = "relu2"; }),
             Contains("hidden_act \"relu2\" is not supported"));
  CHECK_THAT(refused(LlamaArch{}, [](auto& j) { j["partial_rotary_factor"] = 0.3; }),
             Contains("partial_rotary_factor"));
  LlamaArch qwen;
  qwen.model_type = "qwen2";
  qwen.qkv_bias = true;
  CHECK_THAT(refused(qwen, [](auto& j) { j["use_sliding_window"] = true; }),
             Contains("use_sliding_window true"));
  CHECK_THAT(refused(LlamaArch{}, [](auto& j) { j["intermediate_size"] = 30; }),
             Contains("mlp.gate_proj.weight"));  // the file's [24, 16] is not [30, 16]
}

TEST_CASE("a BF16 Llama folder keeps its matrices as stored; its weights are budgeted before reading",
          "[hf][llama][packed]") {
  LlamaArch a;
  a.dtype = "BF16";
  const fs::path dir = write_llama_dir(a, "bf16-held");
  HfLoadOptions no_tokenizer;
  no_tokenizer.tokenizer = false;
  {
    const Model model = load_hf_directory(dir.string(), no_tokenizer);
    for (const char* name : {"embed.tokens", "decoder.layer0.self_attn.wq", "decoder.layer1.ffn.w2"}) {
      INFO(name);
      const Tensor& t = model.params().at(name);
      CHECK(t.is_packed());
      CHECK(t.packed->type == 30);  // ggml's BF16: the file's bytes, read in place
    }
    CHECK_FALSE(model.params().at("decoder.layer0.self_attn_norm.gamma").is_packed());  // vectors: float32
  }
  ::setenv("ATLAS_MEMORY_BUDGET", "1K", 1);
  std::string message;
  try {
    load_hf_directory(dir.string(), no_tokenizer);
  } catch (const AtlasError& e) {
    message = e.what();
  }
  ::unsetenv("ATLAS_MEMORY_BUDGET");
  CHECK_THAT(message, Contains("the model's weights need about"));
  CHECK_THAT(message, Contains("16-bit matrices kept as stored"));
  fs::remove_all(dir);
}
