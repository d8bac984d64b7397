// GGUF files (llama.cpp's layout: token_embd, blk.N.attn_q / attn_k / attn_v / attn_output,
// ffn_gate / ffn_up / ffn_down, attn_norm / ffn_norm, output_norm, output; ne[0] fastest)
// written byte by byte (tests/core/gguf_test_util.h) and loaded as engine models, against a
// naive double-precision decoder in llama.cpp's formulation written here: for "llama" the
// rotation pairs adjacent dimensions of the file's (permuted) q and k rows, for "qwen2" and
// "gemma" it pairs i with i + d_head / 2. Weights are F32, F16 and Q8_0 (quantized here by hand,
// the oracle using the values d * q the file holds). Also: Llama 3.1's rope_freqs factors,
// and bad files.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/formats/ggml_types.h"
#include "core/formats/gguf_model.h"
#include "core/formats/model_io.h"
#include "core/model/model.h"
#include "core/tensor/error.h"
#include "tests/core/gguf_model_writer.h"
#include "tests/core/gguf_test_util.h"
#include "tests/core/hf_test_util.h"

using namespace atlas;
using namespace gguf_test;
using Catch::Matchers::Contains;

namespace {

using DoubleMatrix = std::vector<std::vector<double>>;

// ---- the naive decoder (llama.cpp's formulation) --------------------------------------------

DoubleMatrix mul_t(const DoubleMatrix& x, const Weight& w, const Weight* b = nullptr) {
  DoubleMatrix y(x.size(), std::vector<double>(size_t(w.rows)));
  for (size_t i = 0; i < x.size(); ++i)
    for (int64_t o = 0; o < w.rows; ++o) {
      double s = b ? b->v[size_t(o)] : 0;
      for (int64_t c = 0; c < w.cols; ++c) s += x[i][size_t(c)] * w.v[size_t(o * w.cols + c)];
      y[i][size_t(o)] = s;
    }
  return y;
}

DoubleMatrix rms(const DoubleMatrix& x, const Weight& g, double eps) {
  DoubleMatrix y = x;
  for (auto& row : y) {
    double ms = 0;
    for (double v : row) ms += v * v;
    ms /= double(row.size());
    for (size_t k = 0; k < row.size(); ++k) row[k] = row[k] / std::sqrt(ms + eps) * g.v[k];
  }
  return y;
}

// ggml_rope: mode NORM rotates (x[2i], x[2i+1]); mode NEOX rotates (x[i], x[i + n/2]); the
// angle is p * theta^(-2i/n) / factor_i.
void rope(DoubleMatrix& x, int64_t heads, const Arch& a) {
  const int64_t n = a.dh();
  const bool neox = a.name != "llama";
  for (size_t p = 0; p < x.size(); ++p)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < n / 2; ++i) {
        double angle = double(p) * std::pow(a.theta, -2.0 * double(i) / double(n));
        if (!a.rope_freqs.empty()) angle /= a.rope_freqs[size_t(i)];
        const size_t x0 = size_t(h * n + (neox ? i : 2 * i)), x1 = size_t(h * n + (neox ? i + n / 2 : 2 * i + 1));
        const double u = x[p][x0], v = x[p][x1];
        x[p][x0] = u * std::cos(angle) - v * std::sin(angle);
        x[p][x1] = u * std::sin(angle) + v * std::cos(angle);
      }
}

struct LlamaCppOracle {
  DoubleMatrix logits;
  std::vector<std::vector<DoubleMatrix>> attn;
};

LlamaCppOracle naive_llama_cpp(const Arch& a, const std::map<std::string, Weight>& w,
                               const std::vector<int>& ids) {
  auto W = [&](const std::string& n) -> const Weight& { return w.at(n); };
  const int64_t L = int64_t(ids.size()), dh = a.dh();
  DoubleMatrix x(size_t(L), std::vector<double>(size_t(a.d)));
  for (int64_t i = 0; i < L; ++i)
    for (int64_t k = 0; k < a.d; ++k)
      x[size_t(i)][size_t(k)] = W("token_embd.weight").v[size_t(ids[size_t(i)] * a.d + k)] *
                                (a.gemma ? std::sqrt(float(a.d)) : 1.0);
  LlamaCppOracle out;
  for (int64_t l = 0; l < a.layers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    const DoubleMatrix n = rms(x, W(b + "attn_norm.weight"), a.eps);
    DoubleMatrix Q = mul_t(n, W(b + "attn_q.weight"), a.biases ? &W(b + "attn_q.bias") : nullptr);
    DoubleMatrix K = mul_t(n, W(b + "attn_k.weight"), a.biases ? &W(b + "attn_k.bias") : nullptr);
    const DoubleMatrix V =
        mul_t(n, W(b + "attn_v.weight"), a.biases ? &W(b + "attn_v.bias") : nullptr);
    rope(Q, a.heads, a);
    rope(K, a.kv_heads, a);
    DoubleMatrix o(size_t(L), std::vector<double>(size_t(a.heads * dh)));
    std::vector<DoubleMatrix> maps;
    for (int64_t h = 0; h < a.heads; ++h) {
      const int64_t g = h / (a.heads / a.kv_heads);
      DoubleMatrix p(size_t(L), std::vector<double>(size_t(L), 0.0));
      for (int64_t i = 0; i < L; ++i) {
        std::vector<double> s(size_t(i + 1));
        double mx = -INFINITY, z = 0;
        for (int64_t j = 0; j <= i; ++j) {
          double dot = 0;
          for (int64_t k = 0; k < dh; ++k) dot += Q[size_t(i)][size_t(h * dh + k)] * K[size_t(j)][size_t(g * dh + k)];
          s[size_t(j)] = dot / std::sqrt(double(dh));
          mx = std::max(mx, s[size_t(j)]);
        }
        for (int64_t j = 0; j <= i; ++j) z += std::exp(s[size_t(j)] - mx);
        for (int64_t j = 0; j <= i; ++j) p[size_t(i)][size_t(j)] = std::exp(s[size_t(j)] - mx) / z;
        for (int64_t k = 0; k < dh; ++k)
          for (int64_t j = 0; j <= i; ++j) o[size_t(i)][size_t(h * dh + k)] += p[size_t(i)][size_t(j)] * V[size_t(j)][size_t(g * dh + k)];
      }
      maps.push_back(p);
    }
    out.attn.push_back(maps);
    const DoubleMatrix ao = mul_t(o, W(b + "attn_output.weight"));
    for (int64_t i = 0; i < L; ++i)
      for (int64_t k = 0; k < a.d; ++k) x[size_t(i)][size_t(k)] += ao[size_t(i)][size_t(k)];
    const DoubleMatrix m = rms(x, W(b + "ffn_norm.weight"), a.eps);
    DoubleMatrix gate = mul_t(m, W(b + "ffn_gate.weight"));
    const DoubleMatrix up = mul_t(m, W(b + "ffn_up.weight"));
    for (size_t i = 0; i < gate.size(); ++i)
      for (size_t k = 0; k < gate[i].size(); ++k) {
        const double v = gate[i][k];
        const double act = a.gemma ? 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)))
                                   : v / (1 + std::exp(-v));
        gate[i][k] = act * up[i][k];
      }
    const DoubleMatrix down = mul_t(gate, W(b + "ffn_down.weight"));
    for (int64_t i = 0; i < L; ++i)
      for (int64_t k = 0; k < a.d; ++k) x[size_t(i)][size_t(k)] += down[size_t(i)][size_t(k)];
  }
  x = rms(x, W("output_norm.weight"), a.eps);
  out.logits = mul_t(x, a.tied ? W("token_embd.weight") : W("output.weight"));
  return out;
}

// The naive decoder multiplies float activations by the dequantized weights: the engine's exact
// products compute the same model (the int8-activation products are checked against it with
// their own bound below).
void check_gguf_against_naive(const Arch& a) {
  const ScopedQuantizedProducts exact(QuantizedProducts::Exact);
  const File f = make_file(a);
  const std::filesystem::path path = write(f, a.name);
  GgufLoadOptions o;
  o.tokenizer = false;  // ids are given directly
  const Model model = load_gguf_model(path.string(), o);
  const std::vector<int> ids = {3, 170, 5, 5, 9, 30, 259, 170, 8, 1, 39, 0};
  std::vector<TokenInfo> tokens;
  for (int id : ids) tokens.push_back({id, std::to_string(id)});
  const RunResult r = model.forward(tokens, {}, RunOptions{});
  const LlamaCppOracle want = naive_llama_cpp(a, f.w, ids);
  double scale = 1, worst = 0;
  for (const auto& row : want.logits)
    for (double v : row) scale = std::max(scale, std::abs(v));
  for (size_t i = 0; i < ids.size(); ++i)
    for (int64_t k = 0; k < a.vocab; ++k)
      worst = std::max(worst, std::abs(want.logits[i][size_t(k)] - r.output.data[i * size_t(a.vocab) + size_t(k)]));
  INFO(a.name << ": logits worst " << worst << " of " << scale);
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
    INFO("layer " << l << " attention worst " << err);
    CHECK(err <= 1e-4);
  }
  std::filesystem::remove_all(path.parent_path());
}

}  // namespace

TEST_CASE("GGUF models match a naive decoder in llama.cpp's formulation", "[gguf][llama]") {
  SECTION("llama: adjacent pairs on the file's rows, Q8_0 projections, F16 embedding, GQA") {
    check_gguf_against_naive(Arch{});
  }
  SECTION("llama 3.1: rope_freqs factors recognised as llama3 scaling") {
    Arch a;
    a.theta = 500000;
    a.quantized = false;
    // Factors by llama.cpp's converter rule for low 1, high 4, context 8192, factor 8, over
    // w_i = 500000^(-2i/8): wavelengths 6.3 and 167 (shorter than 2048: 1), 4443 (between:
    // smoothed, 2.69), 118000 (longer than 8192: 8).
    for (int i = 0; i < 4; ++i) {
      const double w = std::pow(500000.0, -2.0 * i / 8), wavelen = 2 * M_PI / w;
      const double smooth = (8192 / wavelen - 1) / (4 - 1);
      a.rope_freqs.push_back(wavelen < 2048 ? 1.0f : wavelen > 8192 ? 8.0f : float(1 / ((1 - smooth) / 8 + smooth)));
    }
    REQUIRE(a.rope_freqs[2] == Approx(2.694).epsilon(1e-3));
    check_gguf_against_naive(a);
    a.rope_freqs = {8.0f, 1.0f, 1.0f, 1.0f};  // not llama3's shape: refused
    const std::filesystem::path path = write(make_file(a), "bad-freqs");
    GgufLoadOptions o;
    o.tokenizer = false;
    CHECK_THROWS_WITH(load_gguf_model(path.string(), o), Contains("rope_freqs.weight holds frequency factors"));
  }
  SECTION("qwen2: rotate_half pairs, q/k/v biases, tied output") {
    Arch a;
    a.name = "qwen2";
    a.biases = true;
    a.tied = true;
    check_gguf_against_naive(a);
  }
  SECTION("phi3: fused attn_qkv and ffn_up (gate, then up), rotate_half pairs") {
    Arch a;
    a.name = "phi3";
    check_gguf_against_naive(a);
  }
  SECTION("gemma: sqrt(d) embedding scale, GeGLU, norms with the 1 stored") {
    Arch a;
    a.name = "gemma";
    a.gemma = true;
    a.tied = true;
    a.kv_heads = 1;
    check_gguf_against_naive(a);
  }
  SECTION("gemma 7B's layout: attention.key_length 16 over embedding_length 32 with 4 heads") {
    Arch a;
    a.name = "gemma";
    a.gemma = true;
    a.tied = true;
    a.head_dim = 16;
    check_gguf_against_naive(a);
  }
}

TEST_CASE("a GGUF model file per tensor type matches the naive decoder on its dequantized weights",
          "[gguf][llama][quant]") {
  for (uint32_t type : {T_F16, T_BF16, T_Q4_0, T_Q4_1, T_Q5_0, T_Q5_1, T_Q8_0, T_Q4_K, T_Q5_K, T_Q6_K}) {
    Arch a;
    a.name = "llama";
    a.matrix_type = type;
    const bool k_quant = ggml_type_info(type).block_elems == 256;
    if (k_quant) a.ff = 256;  // ffn_down's rows are one super-block each
    INFO(ggml_type_info(type).name);
    const File f = make_file(a);
    // The type is really in the file, for every matrix whose rows hold whole blocks of it.
    int typed = 0;
    for (const auto& [name, w] : f.w) typed += w.type == type;
    CHECK(typed >= (k_quant ? a.layers : 5 * a.layers));
    check_gguf_against_naive(a);
  }
}

// llama.cpp's arithmetic (activations rounded to int8 per 32 values) against the dequantized
// model it approximates, on weights a quarter of the other tests' (|w| up to ~1, still several
// times a trained model's): logits within 3 % of their range and attention weights within 0.05,
// the bounds docs/quantized-models.md states with the measured values. The exact products meet
// 1e-4 on the same kind of files (above).
TEST_CASE("int8-activation products stay within the stated bound of the dequantized model",
          "[gguf][llama][quant]") {
  for (uint32_t type : {T_Q4_0, T_Q4_1, T_Q5_0, T_Q5_1, T_Q8_0, T_Q4_K, T_Q5_K, T_Q6_K}) {
    Arch a;
    a.name = "llama";
    a.matrix_type = type;
    a.weight_scale = 0.25f;
    if (ggml_type_info(type).block_elems == 256) a.ff = 256;
    INFO(ggml_type_info(type).name);
    const std::filesystem::path path = write(make_file(a), "int8");
    GgufLoadOptions o;
    o.tokenizer = false;
    const Model model = load_gguf_model(path.string(), o);
    std::vector<TokenInfo> tokens;
    for (int id : {3, 170, 5, 5, 9, 30, 259, 170, 8, 1, 39, 0}) tokens.push_back({id, std::to_string(id)});
    RunResult exact, fast;
    {
      const ScopedQuantizedProducts p(QuantizedProducts::Exact);
      exact = model.forward(tokens, {}, RunOptions{});
    }
    {
      const ScopedQuantizedProducts p(QuantizedProducts::Int8Activations);
      fast = model.forward(tokens, {}, RunOptions{});
    }
    float range = 0, worst = 0;
    for (size_t i = 0; i < exact.output.data.size(); ++i) {
      range = std::max(range, std::abs(exact.output.data[i]));
      worst = std::max(worst, std::abs(exact.output.data[i] - fast.output.data[i]));
    }
    INFO("logits worst " << worst << " of " << range);
    CHECK(range > 0.1f);  // the model computes something
    CHECK(worst <= 0.03f * range);
    CHECK(worst > 0.0f);  // and the int8 products really ran
    for (int64_t l = 0; l < a.layers; ++l) {
      const std::string name = "decoder.layer" + std::to_string(l) + ".self_attn";
      const Tensor& e = exact.trace.find(name)->tensor;
      const Tensor& f = fast.trace.find(name)->tensor;
      float err = 0;
      for (size_t i = 0; i < e.data.size(); ++i) err = std::max(err, std::abs(e.data[i] - f.data[i]));
      INFO(name << " worst " << err);
      CHECK(err <= 0.05f);
    }
    std::filesystem::remove_all(path.parent_path());
  }
}

// What loading `f` (written as `name`, without its tokenizer) throws; "" when it loads.
static std::string gguf_load_refusal(File f, const std::string& name) {
  GgufLoadOptions o;
  o.tokenizer = false;
  const std::filesystem::path path = write(f, name);
  std::string m;
  try {
    load_gguf_model(path.string(), o);
  } catch (const AtlasError& e) {
    m = e.what();
  }
  std::filesystem::remove_all(path.parent_path());
  return m;
}

TEST_CASE("bad GGUF models are refused by name", "[gguf][llama][errors]") {
  const auto message = gguf_load_refusal;
  File unknown = make_file(Arch{});
  unknown.writer.kvs[0].second = str("mamba");
  CHECK_THAT(message(unknown, "arch"), Contains("general.architecture \"mamba\" is not supported"));
  File missing = make_file(Arch{});
  missing.writer.tensors.erase(missing.writer.tensors.begin() + 3);  // blk.0.attn_k.weight
  CHECK_THAT(message(missing, "missing"), Contains("blk.0.attn_k.weight"));
  File extra = make_file(Arch{});
  extra.writer.tensor("blk.0.attn_q_norm.weight", {32}, T_F32, Bytes(128, 0));
  CHECK_THAT(message(extra, "extra"), Contains("unexpected tensor \"blk.0.attn_q_norm.weight\""));
  File yarn = make_file(Arch{});
  yarn.writer.kv("llama.rope.scaling.type", str("yarn"));
  CHECK_THAT(message(yarn, "yarn"), Contains("rope.scaling.type \"yarn\" is not supported"));
  File heads = make_file(Arch{});
  heads.writer.kv("llama.attention.key_length", u32(16));  // the tensors have heads of 32 / 4 = 8
  CHECK_THAT(message(heads, "heads"), Contains("attn_q.weight"));
  File values = make_file(Arch{});
  values.writer.kv("llama.attention.value_length", u32(16));
  CHECK_THAT(message(values, "values"), Contains("attention.value_length differs"));
}

TEST_CASE("GGUF sizes beyond the engine's limits are refused before arithmetic uses them",
          "[gguf][llama][errors]") {
  // 2^62 heads times an explicit key_length overflowed (undefined behaviour, which the sanitizer
  // build reports); each size is now within its limit (core/config/config_limits.h) first.
  const auto message = gguf_load_refusal;
  Arch a;
  a.head_dim = 8;
  File heads = make_file(a);
  REQUIRE(heads.writer.kvs[3].first == "llama.attention.head_count");
  heads.writer.kvs[3].second = u64(uint64_t(1) << 62);
  CHECK_THAT(message(heads, "huge-heads"),
             Contains("llama.attention.head_count is 4611686018427387904, out of range: it must "
                      "be from 1 to 1024"));
  File width = make_file(Arch{});
  REQUIRE(width.writer.kvs[1].first == "llama.embedding_length");
  width.writer.kvs[1].second = i64(-32);
  CHECK_THAT(message(width, "negative-width"),
             Contains("llama.embedding_length is -32, out of range: it must be from 1 to 65536"));
  CHECK(message(make_file(a), "sane").empty());  // the same file with sane sizes loads
}

TEST_CASE("a .gguf path is a MODEL everywhere (load_model), with the tokenizer it carries",
          "[gguf][llama]") {
  Arch a;
  a.vocab = 259;
  File f = make_file(a);
  const std::filesystem::path bare = write(f, "spec-bare");
  // Without tokenizer metadata the file cannot tokenize text: the message says so.
  CHECK_THROWS_WITH(load_model(bare.string()), Contains("tokenizer.ggml.model"));
  std::filesystem::remove_all(bare.parent_path());
  add_byte_level_tokenizer(f);
  const std::filesystem::path path = write(f, "spec");
  const Model model = load_model(path.string());
  // "123 hi": BOS, the digit group "123" (merges 1+2, 12+3), then " hi" as three byte symbols.
  const RunResult r = model.run("123 hi", "", RunOptions{});
  std::vector<int32_t> ids;
  for (const TokenInfo& t : r.trace.source_tokens) ids.push_back(t.id);
  CHECK(ids == std::vector<int32_t>{258, 257, 32, 104, 105});
  CHECK(r.output.shape == Shape{5, 259});
  std::filesystem::remove_all(path.parent_path());
}
