#pragma once
// Test helpers for the Hugging Face loader tests (tests/core/test_hf_*.cpp, tests/app): write
// checkpoints in HF's own naming and layout, byte by byte, independent of the engine's writer.
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

namespace hf_test {

namespace fs = std::filesystem;

struct HfTensor {
  std::vector<int64_t> shape;
  std::vector<float> data;  // row-major, HF layout
  const float& at(int64_t i, int64_t j) const { return data[size_t(i * shape[1] + j)]; }
};
using HfTensors = std::map<std::string, HfTensor>;

// The double-precision oracles: a vector, and a matrix as rows.
using Vec = std::vector<double>;
using Matrix = std::vector<Vec>;

// The double-precision oracles' building blocks, in HF's weight layout: y = x W^T + b (nn.Linear,
// W [out, in]) and layer norm (eps 1e-12 is BERT's and ViT's; GPT-2 passes its 1e-5).
inline std::vector<double> naive_linear(const std::vector<double>& x, const HfTensor& w,
                                        const HfTensor& b) {
  std::vector<double> y(size_t(w.shape[0]));
  for (int64_t o = 0; o < w.shape[0]; ++o) {
    double s = b.data[size_t(o)];
    for (int64_t i = 0; i < w.shape[1]; ++i) s += w.at(o, i) * x[size_t(i)];
    y[size_t(o)] = s;
  }
  return y;
}

inline std::vector<double> naive_layer_norm(const std::vector<double>& x, const HfTensor& w,
                                            const HfTensor& b, double eps = 1e-12) {
  double mean = 0, var = 0;
  for (double v : x) mean += v;
  mean /= double(x.size());
  for (double v : x) var += (v - mean) * (v - mean);
  var /= double(x.size());
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    y[i] = (x[i] - mean) / std::sqrt(var + eps) * w.data[i] + b.data[i];
  return y;
}

inline fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() /
               ("atlas-test-hf-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

inline std::string read_text_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void write_text(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

// Deterministic small values k/256, |k| <= 100: exact in F32, F16 and BF16 alike, so one
// oracle serves every dtype.
inline HfTensor pattern(std::vector<int64_t> shape, uint32_t seed, float scale = 1.0f) {
  HfTensor t{shape, {}};
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  t.data.resize(size_t(n));
  uint32_t x = seed * 2654435761u + 12345u;
  for (auto& v : t.data) {
    x = x * 1664525u + 1013904223u;
    int k = int((x >> 8) % 201) - 100;
    v = scale * float(k) / 256.0f;
  }
  return t;
}

inline uint16_t to_f16(float f) {  // exact for the pattern() values (normal range)
  uint32_t b;
  std::memcpy(&b, &f, 4);
  uint32_t sign = (b >> 16) & 0x8000u;
  if ((b & 0x7fffffffu) == 0) return uint16_t(sign);
  int32_t exp = int32_t((b >> 23) & 0xff) - 127 + 15;
  if (exp <= 0) return uint16_t(sign);  // below float16's normal range: written as zero
  uint32_t mant = (b >> 13) & 0x3ffu;
  return uint16_t(sign | (uint32_t(exp) << 10) | mant);
}
inline uint16_t to_bf16(float f) {  // truncation; exact for the pattern() values
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return uint16_t(b >> 16);
}

// A safetensors file written by hand: header JSON, space padding, raw little-endian data.
inline void write_safetensors_file(const fs::path& path, const HfTensors& tensors,
                                   const std::string& dtype = "F32") {
  nlohmann::json header = nlohmann::json::object();
  const size_t elem = dtype == "F32" ? 4 : 2;
  size_t offset = 0;
  for (const auto& [name, t] : tensors) {
    header[name] = {{"dtype", dtype}, {"shape", t.shape},
                    {"data_offsets", {offset, offset + t.data.size() * elem}}};
    offset += t.data.size() * elem;
  }
  header["__metadata__"] = {{"format", "pt"}};
  std::string h = header.dump();
  while (h.size() % 8) h += ' ';
  std::ofstream out(path, std::ios::binary);
  uint64_t n = h.size();
  out.write(reinterpret_cast<const char*>(&n), 8);
  out << h;
  for (const auto& [name, t] : tensors) {
    if (dtype == "F32") {
      out.write(reinterpret_cast<const char*>(t.data.data()), std::streamsize(t.data.size() * 4));
    } else {
      std::vector<uint16_t> half(t.data.size());
      for (size_t i = 0; i < half.size(); ++i)
        half[i] = dtype == "F16" ? to_f16(t.data[i]) : to_bf16(t.data[i]);
      out.write(reinterpret_cast<const char*>(half.data()), std::streamsize(half.size() * 2));
    }
  }
}

// GPT-2's bytes_to_unicode (openai/gpt-2 src/encoder.py): printable Latin-1 bytes map to
// themselves, the other bytes to U+0100 + n in byte order.
inline std::vector<std::string> byte_symbols() {
  std::vector<int> cps(256, -1);
  for (int b = 0; b < 256; ++b)
    if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255)) cps[size_t(b)] = b;
  int n = 0;
  for (int b = 0; b < 256; ++b)
    if (cps[size_t(b)] < 0) cps[size_t(b)] = 256 + n++;
  std::vector<std::string> out;
  for (int cp : cps) {
    std::string s;
    if (cp < 0x80) s += char(cp);
    else {
      s += char(0xC0 | (cp >> 6));
      s += char(0x80 | (cp & 0x3f));
    }
    out.push_back(s);
  }
  return out;
}

// vocab.json + merges.txt of a tiny GPT-2 vocabulary: 256 byte symbols (id = byte), then
// "Ġt" (256), "he" (257), "Ġthe" (258), "<|endoftext|>" (259).
inline void write_gpt2_tokenizer(const fs::path& dir) {
  nlohmann::json vocab = nlohmann::json::object();
  auto syms = byte_symbols();
  for (int b = 0; b < 256; ++b) vocab[syms[size_t(b)]] = b;
  vocab["\xC4\xA0t"] = 256;
  vocab["he"] = 257;
  vocab["\xC4\xA0the"] = 258;
  vocab["<|endoftext|>"] = 259;
  write_text(dir / "vocab.json", vocab.dump());
  write_text(dir / "merges.txt", "#version: 0.2\n\xC4\xA0 t\nh e\n\xC4\xA0t he\n");
}
constexpr int64_t kTinyGpt2Vocab = 260;

inline void write_bert_vocab(const fs::path& dir, const std::vector<std::string>& words) {
  std::string text;
  for (const auto& w : words) text += w + "\n";
  write_text(dir / "vocab.txt", text);
}


// A valid one-layer GPT-2 directory (d 8, 2 heads, 6 positions, the tiny BPE vocab); the error
// tests break it in one way each. `untied_head`: "tie_word_embeddings": false and an
// lm_head.weight equal to 2 wte (so the logits are exactly twice the tied model's).
inline fs::path tiny_gpt2_dir(const std::string& name, bool extra = false, bool untied_head = false) {
  fs::path dir = fresh_dir(name);
  const int64_t V = kTinyGpt2Vocab, d = 8, ctx = 6, f = 16;
  nlohmann::json j = {{"model_type", "gpt2"}, {"vocab_size", V}, {"n_embd", d}, {"n_layer", 1},
                      {"n_head", 2}, {"n_positions", ctx}, {"n_inner", f}};
  if (untied_head) j["tie_word_embeddings"] = false;
  write_text(dir / "config.json", j.dump());
  write_gpt2_tokenizer(dir);
  HfTensors t;
  uint32_t s = 1;
  auto add = [&](const std::string& n, std::vector<int64_t> shape) { t[n] = pattern(shape, s++); };
  add("wte.weight", {V, d});
  add("wpe.weight", {ctx, d});
  add("h.0.ln_1.weight", {d});
  add("h.0.ln_1.bias", {d});
  add("h.0.attn.c_attn.weight", {d, 3 * d});
  add("h.0.attn.c_attn.bias", {3 * d});
  add("h.0.attn.c_proj.weight", {d, d});
  add("h.0.attn.c_proj.bias", {d});
  add("h.0.ln_2.weight", {d});
  add("h.0.ln_2.bias", {d});
  add("h.0.mlp.c_fc.weight", {d, f});
  add("h.0.mlp.c_fc.bias", {f});
  add("h.0.mlp.c_proj.weight", {f, d});
  add("h.0.mlp.c_proj.bias", {d});
  add("ln_f.weight", {d});
  add("ln_f.bias", {d});
  if (extra) add("h.0.attn.rotary.weight", {d});
  if (untied_head) {
    t["lm_head.weight"] = t["wte.weight"];
    for (float& v : t["lm_head.weight"].data) v *= 2.0f;
  }
  write_safetensors_file(dir / "model.safetensors", t);
  return dir;
}


}  // namespace hf_test
