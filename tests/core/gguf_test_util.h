#pragma once
// A GGUF writer for tests (tests/core/test_gguf*.cpp, tests/app/test_gguf_cli.cpp), written
// byte by byte from the format description (ggml-org/ggml docs/gguf.md), independent of the
// reader under test: header, key/values, tensor infos, padding to the alignment, data.
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace gguf_test {

using Bytes = std::vector<uint8_t>;

// Value type ids and ggml type ids, spelled out here rather than taken from the reader.
enum : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kStr = 8,
  kArr = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};
enum : uint32_t {
  T_F32 = 0,
  T_F16 = 1,
  T_Q4_0 = 2,
  T_Q4_1 = 3,
  T_Q5_0 = 6,
  T_Q5_1 = 7,
  T_Q8_0 = 8,
  T_Q2_K = 10,
  T_Q4_K = 12,
  T_Q5_K = 13,
  T_Q6_K = 14,
  T_BF16 = 30,
};

inline void put(Bytes& b, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) b.push_back(uint8_t(v >> (8 * i)));
}
inline void put_str(Bytes& b, const std::string& s) {
  put(b, s.size(), 8);
  b.insert(b.end(), s.begin(), s.end());
}
inline void put_f32(Bytes& b, float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  put(b, u, 4);
}
inline void put_f64(Bytes& b, double d) {
  uint64_t u;
  std::memcpy(&u, &d, 8);
  put(b, u, 8);
}
inline void append(Bytes& b, const Bytes& more) {
  for (uint8_t x : more) b.push_back(x);  // (vector::insert trips a GCC 12 false warning here)
}

// Encoded values (type id + payload), for kv().
struct Value {
  uint32_t type;
  Bytes payload;
};
inline Value u8(uint8_t v) {
  Value x{kU8, {}};
  put(x.payload, v, 1);
  return x;
}
inline Value i8(int8_t v) {
  Value x{kI8, {}};
  put(x.payload, uint8_t(v), 1);
  return x;
}
inline Value u16(uint16_t v) {
  Value x{kU16, {}};
  put(x.payload, v, 2);
  return x;
}
inline Value i16(int16_t v) {
  Value x{kI16, {}};
  put(x.payload, uint16_t(v), 2);
  return x;
}
inline Value u32(uint32_t v) {
  Value x{kU32, {}};
  put(x.payload, v, 4);
  return x;
}
inline Value i32(int32_t v) {
  Value x{kI32, {}};
  put(x.payload, uint32_t(v), 4);
  return x;
}
inline Value u64(uint64_t v) {
  Value x{kU64, {}};
  put(x.payload, v, 8);
  return x;
}
inline Value i64(int64_t v) {
  Value x{kI64, {}};
  put(x.payload, uint64_t(v), 8);
  return x;
}
inline Value f32(float v) {
  Value x{kF32, {}};
  put_f32(x.payload, v);
  return x;
}
inline Value f64(double v) {
  Value x{kF64, {}};
  put_f64(x.payload, v);
  return x;
}
inline Value boolean(bool v) {
  Value x{kBool, {}};
  put(x.payload, v ? 1 : 0, 1);
  return x;
}
inline Value str(const std::string& s) {
  Value x{kStr, {}};
  put_str(x.payload, s);
  return x;
}
// An array of `elems`, which must all have type `elem_type` (their payloads are concatenated).
inline Value array(uint32_t elem_type, const std::vector<Value>& elems) {
  Value x{kArr, {}};
  put(x.payload, elem_type, 4);
  put(x.payload, elems.size(), 8);
  // A nested array element is its payload alone: element type, count, elements.
  for (const Value& e : elems) append(x.payload, e.payload);
  return x;
}
inline Value strings(const std::vector<std::string>& items) {
  std::vector<Value> v;
  for (const auto& s : items) v.push_back(str(s));
  return array(kStr, v);
}

struct TensorSpec {
  std::string name;
  std::vector<uint64_t> ne;  // ne[0] fastest
  uint32_t type;
  Bytes data;
  std::optional<uint64_t> offset;  // override the computed (aligned) offset
};

struct Writer {
  uint32_t version = 3;
  uint64_t alignment = 32;  // padding used; write general.alignment with kv() to change it
  std::optional<uint64_t> tensor_count, kv_count;  // override the true counts
  std::vector<std::pair<std::string, Value>> kvs;
  std::vector<TensorSpec> tensors;

  Writer& kv(const std::string& key, Value v) {
    kvs.emplace_back(key, std::move(v));
    return *this;
  }
  Writer& tensor(const std::string& name, std::vector<uint64_t> ne, uint32_t type, Bytes data) {
    tensors.push_back({name, std::move(ne), type, std::move(data), std::nullopt});
    return *this;
  }

  static uint64_t pad(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }

  // The header, key/values and tensor infos, before the padding to the data section.
  Bytes header() const {
    Bytes b = {'G', 'G', 'U', 'F'};
    put(b, version, 4);
    put(b, tensor_count.value_or(tensors.size()), 8);
    put(b, kv_count.value_or(kvs.size()), 8);
    for (const auto& [key, v] : kvs) {
      put_str(b, key);
      put(b, v.type, 4);
      append(b, v.payload);
    }
    uint64_t offset = 0;
    for (const TensorSpec& t : tensors) {
      put_str(b, t.name);
      put(b, t.ne.size(), 4);
      for (uint64_t d : t.ne) put(b, d, 8);
      put(b, t.type, 4);
      const uint64_t at = t.offset.value_or(offset);
      put(b, at, 8);
      offset = pad(at + t.data.size(), alignment);
    }
    return b;
  }

  Bytes build() const {
    Bytes b = header();
    uint64_t offset = 0;
    std::vector<uint64_t> offsets;
    for (const TensorSpec& t : tensors) {
      const uint64_t at = t.offset.value_or(offset);
      offsets.push_back(at);
      offset = pad(at + t.data.size(), alignment);
    }
    const uint64_t data_start = pad(b.size(), alignment);
    b.resize(data_start, 0);
    for (size_t i = 0; i < tensors.size(); ++i) {
      if (b.size() < data_start + offsets[i]) b.resize(data_start + offsets[i], 0);
      if (b.size() > data_start + offsets[i]) continue;  // an overridden offset: data not placed
      append(b, tensors[i].data);
    }
    return b;
  }
};

inline void write_file(const std::filesystem::path& p, const Bytes& b) {
  std::ofstream out(p, std::ios::binary);
  out.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}

// IEEE half bits of a few exact values used by the tests.
constexpr uint16_t kHalfHalf = 0x3800;     // 0.5
constexpr uint16_t kHalfQuarter = 0x3400;  // 0.25
constexpr uint16_t kHalfOne = 0x3C00;      // 1.0
constexpr uint16_t kHalfTwo = 0x4000;      // 2.0
constexpr uint16_t kHalfMinus3 = 0xC200;   // -3.0

// A small model-like file: llama metadata, a token list, and tensors of several types.
inline Writer tiny_model_writer() {
  Writer w;
  w.kv("general.architecture", str("llama"))
      .kv("general.name", str("tiny"))
      .kv("llama.block_count", u32(1))
      .kv("llama.context_length", u32(64))
      .kv("llama.rope.freq_base", f32(10000.0f))
      .kv("tokenizer.ggml.tokens",
          strings({"<unk>", "<s>", "</s>", "a", "b", "c", "d", "e", "f", "g", "h", "i"}));
  Bytes f32data;
  for (int i = 0; i < 6; ++i) put_f32(f32data, float(i) - 2.5f);
  w.tensor("output_norm.weight", {6}, T_F32, f32data);
  Bytes q8;  // one Q8_0 block: d = 0.5, q = -16..15
  put(q8, kHalfHalf, 2);
  for (int i = 0; i < 32; ++i) put(q8, uint8_t(int8_t(i - 16)), 1);
  w.tensor("token_embd.weight", {32, 1}, T_Q8_0, q8);
  Bytes q2k(84, 0);  // a Q2_K super-block: listed, not dequantized
  w.tensor("blk.0.ffn_down.weight", {256, 1}, T_Q2_K, q2k);
  return w;
}
inline Bytes tiny_model() { return tiny_model_writer().build(); }

}  // namespace gguf_test
