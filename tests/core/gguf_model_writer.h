#pragma once
#include "core/backend/backend.h"
// Llama-family model files in GGUF (llama.cpp's tensor names and keys), written byte by byte
// with tests/core/gguf_test_util.h: an architecture description, its weights of any ggml type
// with the values the file holds (for naive oracles), and the file. Used by the GGUF model
// tests (tests/core/test_gguf_model.cpp) and the app's open/drop tests (tests/ui).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/formats/ggml_types.h"
#include "tests/core/gguf_test_util.h"
#include "tests/core/hf_test_util.h"

namespace gguf_test {

using atlas::dequantize_ggml;
using atlas::ggml_type_info;
using atlas::GgmlTypeInfo;

struct Arch {
  std::string name = "llama";
  int64_t vocab = 260, d = 32, layers = 2, heads = 4, kv_heads = 2, ff = 24;  // Q8_0 rows: 32
  double theta = 10000, eps = 1e-5;
  bool tied = false, biases = false, gemma = false, quantized = true;
  // The type of the projection matrices whose rows hold whole blocks of it (0: Q8_0 when
  // `quantized`); K-quant super-blocks are 256 values, so only ffn_down (cols = ff) can hold them.
  uint32_t matrix_type = 0;
  std::vector<float> rope_freqs;  // Llama 3.1 factors, empty: none
  int64_t head_dim = 0;  // written as attention.key_length / value_length when set (Gemma 7B)
  float weight_scale = 1.0f;  // multiplies every matrix's values (norms stay near 1)
  int64_t dh() const { return head_dim > 0 ? head_dim : d / heads; }
};

// A weight: engine-order [rows, cols] values, exactly as the file will hold them.
struct Weight {
  int64_t rows, cols;
  std::vector<double> v;
  uint32_t type;
  Bytes bytes;
};

inline float half_to_float(uint16_t h) {  // normal numbers and zero (all this test writes)
  const uint32_t sign = uint32_t(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  uint32_t bits = sign;
  if (exp != 0) bits |= ((exp - 15 + 127) << 23) | (mant << 13);
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Q8_0 by hand: per 32 values d = max|x| / 127 (stored as f16), q = round(x / d).
inline Weight q8_weight(int64_t rows, int64_t cols, uint32_t seed, float k = 1.0f) {
  const hf_test::HfTensor t = hf_test::pattern({rows, cols}, seed, 3.0f * k);
  Weight w{rows, cols, {}, T_Q8_0, {}};
  for (size_t b = 0; b < t.data.size(); b += 32) {
    float amax = 0;
    for (size_t i = b; i < b + 32; ++i) amax = std::max(amax, std::abs(t.data[i]));
    const uint16_t dh = hf_test::to_f16(amax / 127.0f);
    const float d = half_to_float(dh);
    put(w.bytes, dh, 2);
    for (size_t i = b; i < b + 32; ++i) {
      const int q = d == 0 ? 0 : int(std::lround(t.data[i] / d));
      put(w.bytes, uint8_t(int8_t(q)), 1);
      w.v.push_back(double(d) * q);
    }
  }
  return w;
}

inline Weight f32_weight(int64_t rows, int64_t cols, uint32_t seed, float scale = 1.0f, float offset = 0.0f) {
  const hf_test::HfTensor t = hf_test::pattern({rows, cols}, seed, scale);
  Weight w{rows, cols, {}, T_F32, {}};
  for (float v : t.data) {
    put_f32(w.bytes, v + offset);
    w.v.push_back(double(v + offset));
  }
  return w;
}

inline Weight f16_weight(int64_t rows, int64_t cols, uint32_t seed, float k = 1.0f) {
  const hf_test::HfTensor t = hf_test::pattern({rows, cols}, seed, 4.0f * k);
  Weight w{rows, cols, {}, T_F16, {}};
  for (float v : t.data) {
    put(w.bytes, hf_test::to_f16(v), 2);
    w.v.push_back(double(v));
  }
  return w;
}

// A weight of any block type: random quant bits with small random scales, written as the file
// holds them; its values are the engine's dequantization (dequantize_ggml), whose every block
// type is checked against values worked by hand from the format in test_gguf.cpp.
inline Weight typed_weight(int64_t rows, int64_t cols, uint32_t type, uint32_t seed, float k = 1.0f) {
  const GgmlTypeInfo info = ggml_type_info(type);
  Weight w{rows, cols, {}, type, {}};
  const int64_t blocks = rows * cols / info.block_elems;
  uint32_t state = seed * 2654435761u + 1;
  auto next = [&] { return state = state * 1664525u + 1013904223u; };
  w.bytes.resize(size_t(blocks * info.block_bytes));
  for (auto& byte : w.bytes) byte = uint8_t(next() >> 24);
  auto scale = [&](size_t at, float lo, float hi) {  // a small f16 scale, never Inf/NaN
    const float v = k * (lo + (hi - lo) * float(next() >> 8) / float(1u << 24));
    const uint16_t h = type == T_BF16 ? hf_test::to_bf16(v) : hf_test::to_f16(v);
    w.bytes[at] = uint8_t(h & 0xff);
    w.bytes[at + 1] = uint8_t(h >> 8);
  };
  for (int64_t b = 0; b < blocks; ++b) {
    const size_t o = size_t(b * info.block_bytes);
    switch (type) {
      case T_F16:
      case T_BF16:
        for (size_t i = 0; i < size_t(info.block_bytes); i += 2) scale(o + i, -2.0f, 2.0f);
        break;
      // Weights within a few units, like a trained model's: scale x largest quant ~ 1-4.
      case T_Q4_0: case T_Q5_0: scale(o, 0.01f, 0.08f); break;
      case T_Q8_0: scale(o, 0.001f, 0.01f); break;
      case T_Q4_1: case T_Q5_1: scale(o, 0.01f, 0.08f); scale(o + 2, -0.3f, 0.3f); break;
      case T_Q4_K: case T_Q5_K: scale(o, 0.0005f, 0.002f); scale(o + 2, 0.0f, 0.002f); break;
      case T_Q6_K: scale(o + 208, 0.0002f, 0.0008f); break;
      default: throw std::invalid_argument("no writer for ggml type " + std::to_string(type));
    }
  }
  std::vector<float> values(size_t(rows * cols));
  dequantize_ggml(type, w.bytes.data(), blocks, values.data());
  w.v.assign(values.begin(), values.end());
  return w;
}

struct File {
  Writer writer;
  std::map<std::string, Weight> w;
};

inline File make_file(const Arch& a) {
  File f;
  const std::string k = a.name + ".";
  f.writer.kv("general.architecture", str(a.name))
      .kv(k + "embedding_length", u32(uint32_t(a.d)))
      .kv(k + "block_count", u32(uint32_t(a.layers)))
      .kv(k + "attention.head_count", u32(uint32_t(a.heads)))
      .kv(k + "attention.head_count_kv", u32(uint32_t(a.kv_heads)))
      .kv(k + "feed_forward_length", u32(uint32_t(a.ff)))
      .kv(k + "context_length", u32(64))
      .kv(k + "rope.freq_base", f32(float(a.theta)))
      .kv(k + "attention.layer_norm_rms_epsilon", f32(float(a.eps)));
  if (a.head_dim > 0)
    f.writer.kv(k + "attention.key_length", u32(uint32_t(a.head_dim)))
        .kv(k + "attention.value_length", u32(uint32_t(a.head_dim)));
  uint32_t seed = 1;
  auto add = [&](const std::string& name, Weight w) {
    // A matrix [rows, cols] is ne = {cols, rows}; a vector [n] is ne = {n}.
    std::vector<uint64_t> ne = w.rows == 1 ? std::vector<uint64_t>{uint64_t(w.cols)}
                                           : std::vector<uint64_t>{uint64_t(w.cols), uint64_t(w.rows)};
    f.writer.tensor(name, ne, w.type, w.bytes);
    f.w[name] = std::move(w);
  };
  auto matrix = [&](int64_t r, int64_t c) {
    if (a.matrix_type != 0) {
      if (c % ggml_type_info(a.matrix_type).block_elems == 0)
        return typed_weight(r, c, a.matrix_type, seed++, a.weight_scale);
      if (c % 32 != 0) return f32_weight(r, c, seed++, 3.0f * a.weight_scale);  // no whole Q8_0 block
    }
    return a.quantized ? q8_weight(r, c, seed++, a.weight_scale) : f32_weight(r, c, seed++, 3.0f * a.weight_scale);
  };
  const int64_t q = a.heads * a.dh(), kv = a.kv_heads * a.dh();
  add("token_embd.weight", f16_weight(a.vocab, a.d, seed++, a.weight_scale));
  for (int64_t i = 0; i < a.layers; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    add(b + "attn_norm.weight", f32_weight(1, a.d, seed++, 1.0f, 1.0f));
    if (a.name == "phi3") {  // one attn_qkv [q | k | v] and one ffn_up [gate | up]
      Weight wq = matrix(q, a.d), wk = matrix(kv, a.d), wv = matrix(kv, a.d);
      Weight fused{q + 2 * kv, a.d, {}, wq.type, {}};
      for (const Weight* part : {&wq, &wk, &wv}) {
        append(fused.bytes, part->bytes);
        fused.v.insert(fused.v.end(), part->v.begin(), part->v.end());
      }
      f.writer.tensor(b + "attn_qkv.weight", {uint64_t(a.d), uint64_t(q + 2 * kv)}, fused.type, fused.bytes);
      f.w[b + "attn_q.weight"] = wq;
      f.w[b + "attn_k.weight"] = wk;
      f.w[b + "attn_v.weight"] = wv;
      Weight wg = matrix(a.ff, a.d), wu = matrix(a.ff, a.d);
      Bytes gate_up = wg.bytes;
      append(gate_up, wu.bytes);
      f.writer.tensor(b + "ffn_up.weight", {uint64_t(a.d), uint64_t(2 * a.ff)}, wg.type, gate_up);
      f.w[b + "ffn_gate.weight"] = wg;
      f.w[b + "ffn_up.weight"] = wu;
      add(b + "attn_output.weight", matrix(a.d, q));
      add(b + "ffn_norm.weight", f32_weight(1, a.d, seed++, 1.0f, 1.0f));
      add(b + "ffn_down.weight", a.quantized && !a.matrix_type ? f32_weight(a.d, a.ff, seed++, a.weight_scale) : matrix(a.d, a.ff));
      continue;
    }
    add(b + "attn_q.weight", matrix(q, a.d));
    add(b + "attn_k.weight", matrix(kv, a.d));
    add(b + "attn_v.weight", matrix(kv, a.d));
    if (a.biases) {
      add(b + "attn_q.bias", f32_weight(1, q, seed++));
      add(b + "attn_k.bias", f32_weight(1, kv, seed++));
      add(b + "attn_v.bias", f32_weight(1, kv, seed++));
    }
    add(b + "attn_output.weight", matrix(a.d, q));
    add(b + "ffn_norm.weight", f32_weight(1, a.d, seed++, 1.0f, 1.0f));
    add(b + "ffn_gate.weight", matrix(a.ff, a.d));
    add(b + "ffn_up.weight", matrix(a.ff, a.d));
    add(b + "ffn_down.weight", a.quantized && !a.matrix_type ? f32_weight(a.d, a.ff, seed++, a.weight_scale) : matrix(a.d, a.ff));
  }
  add("output_norm.weight", f32_weight(1, a.d, seed++, 1.0f, 1.0f));
  if (!a.tied) add("output.weight", f32_weight(a.vocab, a.d, seed++, a.weight_scale));
  if (!a.rope_freqs.empty()) {
    Weight r{1, int64_t(a.rope_freqs.size()), {}, T_F32, {}};
    for (float v : a.rope_freqs) put_f32(r.bytes, v);
    f.writer.tensor("rope_freqs.weight", {a.rope_freqs.size()}, T_F32, r.bytes);
  }
  return f;
}

inline std::filesystem::path write(const File& f, const std::string& name) {
  const std::filesystem::path path = hf_test::fresh_dir("gguf-" + name) / (name + ".gguf");
  write_file(path, f.writer.build());
  return path;
}

// The byte-level vocabulary of a gpt2-type tokenizer: the 256 byte symbols (id = byte), then
// "12", "123" and a BOS "<|begin_of_text|>" (id 258); merges 1+2 and 12+3. Needs vocab >= 259.
inline void add_byte_level_tokenizer(File& f) {
  std::vector<std::string> tokens = hf_test::byte_symbols();
  tokens.insert(tokens.end(), {"12", "123", "<|begin_of_text|>"});
  std::vector<Value> types(256, i32(1));
  types.insert(types.end(), {i32(1), i32(1), i32(3)});
  f.writer.kv("tokenizer.ggml.model", str("gpt2"))
      .kv("tokenizer.ggml.pre", str("llama-bpe"))
      .kv("tokenizer.ggml.tokens", strings(tokens))
      .kv("tokenizer.ggml.token_type", array(kI32, types))
      .kv("tokenizer.ggml.merges", strings({"1 2", "12 3"}))
      .kv("tokenizer.ggml.bos_token_id", u32(258))
      .kv("tokenizer.ggml.add_bos_token", boolean(true));
}

// Sets how the CPU backend multiplies by quantized weights for one test, and restores it.
struct ScopedQuantizedProducts {
  explicit ScopedQuantizedProducts(atlas::QuantizedProducts p) : before(atlas::quantized_products()) {
    atlas::set_quantized_products(p);
  }
  ~ScopedQuantizedProducts() { atlas::set_quantized_products(before); }
  atlas::QuantizedProducts before;
};

}  // namespace gguf_test
