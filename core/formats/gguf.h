#pragma once
// GGUF, llama.cpp's model file (ggml-org/ggml docs/gguf.md), versions 2 and 3. All little-endian:
//   "GGUF", version u32, tensor_count u64, metadata_kv_count u64,
//   metadata: key (u64 length + UTF-8 bytes), value type u32, value
//     (types 0..12: u8 i8 u16 i16 u32 i32 f32 bool string array u64 i64 f64; a string is a u64
//     length + bytes, an array an element type u32 + count u64 + elements, arrays may nest),
//   tensor infos: name, n_dims u32, ne u64[n_dims] (ne[0] varies fastest), ggml type u32,
//     offset u64 relative to the data section,
//   padding to `general.alignment` (u32, default 32), then the data section.
// Everything is validated when the file is opened (every count against the bytes that could
// hold it before anything is allocated, every tensor's bytes inside the file), so reading a
// tensor later cannot fail except on a type this reader does not dequantize.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <map>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "core/formats/ggml_types.h"
#include "core/tensor/tensor.h"

namespace atlas {

class GgufReader;  // gguf.cpp
class InputFile;   // input_file.h

// Metadata value types, numbered as in the file.
enum class GgufType : uint32_t {
  UInt8 = 0,
  Int8 = 1,
  UInt16 = 2,
  Int16 = 3,
  UInt32 = 4,
  Int32 = 5,
  Float32 = 6,
  Bool = 7,
  String = 8,
  Array = 9,
  UInt64 = 10,
  Int64 = 11,
  Float64 = 12,
};
const char* gguf_type_name(GgufType type);  // "UINT32", "STRING", ...

// The elements of a metadata array, held by kind so a 256k-entry vocabulary costs its values,
// not a tagged value each: unsigned integers, signed integers, floats (float32 and float64),
// bools, strings or nested arrays. `type` says which element type the file used.
struct GgufArray {
  GgufType type = GgufType::UInt8;
  std::variant<std::vector<uint64_t>, std::vector<int64_t>, std::vector<double>, std::vector<bool>,
               std::vector<std::string>, std::vector<GgufArray>>
      items;
  size_t size() const;
};

struct GgufValue {
  GgufType type = GgufType::UInt8;
  // UInt8/16/32/64 -> uint64_t, Int8/16/32/64 -> int64_t, Float32/64 -> double, Bool, String,
  // Array.
  std::variant<uint64_t, int64_t, double, bool, std::string, GgufArray> value;
};

struct GgufKeyValue {
  std::string key;
  GgufValue value;
};

struct GgufTensorInfo {
  std::string name;
  Shape shape;              // engine (row-major) order: ne reversed, so ne[0] is the last
  std::vector<int64_t> ne;  // as in the file, ne[0] fastest
  uint32_t ggml_type = 0;
  std::string type_name;  // "Q4_K", "F16", ... (an id unknown to ggml is refused on opening)
  uint64_t offset = 0;    // in the file (the data section start + the recorded offset)
  uint64_t n_bytes = 0;
  int64_t numel = 0;
};

// An opened GGUF file. Tensor bytes are read from the mapping (or the caller's buffer) only when
// read_tensor asks, so opening a multi-GB model costs its header.
class GgufFile {
 public:
  // Memory-maps `path` (input_file.h's policy: a regular file, never blocking).
  static GgufFile open(const std::string& path);
  // Reads the header alone (metadata and tensor table, through InputFile): no tensor data is
  // mapped or read, so a model is described and sized before it is loaded, and the data
  // section is checked only to lie within the file's size. read_tensor then reads the one
  // tensor asked for; read_packed, read_all_tensors and tensor_bytes need open().
  static GgufFile open_header(const std::string& path);
  // Parses a file held in memory; `data` must outlive the result. `origin` (usually the path)
  // starts every error message.
  static GgufFile parse(const uint8_t* data, size_t size, const std::string& origin);
  // The same over bytes the result keeps alive itself.
  static GgufFile parse(std::vector<uint8_t> bytes, const std::string& origin);

  const std::string& origin() const { return origin_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // start of the data section
  size_t file_size() const { return size_; }

  // Metadata in file order, and by key.
  const std::vector<GgufKeyValue>& metadata() const { return metadata_; }
  const GgufValue* find(const std::string& key) const;  // nullptr when absent
  bool has(const std::string& key) const { return find(key) != nullptr; }

  // Typed getters: AtlasError("FILE: metadata key \"K\" is missing") when absent and
  // ("FILE: metadata key \"K\" is STRING, expected an integer") when of another type.
  int64_t get_int(const std::string& key) const;    // any integer type that fits int64
  uint64_t get_uint(const std::string& key) const;  // any integer type, not negative
  double get_float(const std::string& key) const;   // FLOAT32 or FLOAT64
  bool get_bool(const std::string& key) const;
  const std::string& get_string(const std::string& key) const;
  const GgufArray& get_array(const std::string& key) const;
  std::vector<std::string> get_string_array(const std::string& key) const;
  std::vector<int64_t> get_int_array(const std::string& key) const;   // integer elements
  std::vector<double> get_float_array(const std::string& key) const;  // float elements
  // The same with a fallback for an absent key (a present key of the wrong type still throws).
  int64_t get_int_or(const std::string& key, int64_t fallback) const;
  double get_float_or(const std::string& key, double fallback) const;
  std::string get_string_or(const std::string& key, const std::string& fallback) const;

  // Tensors in file order, and by name ("FILE: no tensor \"X\" (the file has N tensors)").
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo& tensor(const std::string& name) const;

  // The tensor as float32 in engine order (shape = dims reversed), dequantized in parallel.
  // Types: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K; any other is refused
  // by name.
  Tensor read_tensor(const std::string& name) const;
  // Every tensor, dequantized by all CPU threads at once (largest first), so the kernel's
  // zeroing of the fresh float pages is shared out too. Unsupported types are refused first.
  std::map<std::string, Tensor> read_all_tensors() const;
  // A tensor of two or more dimensions as stored, read in place where it lies in the mapping (no
  // conversion, no copy): [rows, cols] with cols = ne[0] (whole blocks) and rows the product of
  // the other dims. The types read_tensor reads; the result keeps the mapping alive.
  PackedMatrix read_packed(const std::string& name) const;
  // The raw bytes of a tensor as stored (points into the mapping).
  const uint8_t* tensor_bytes(const GgufTensorInfo& info) const {
    require_data("tensor_bytes");
    return data_ + info.offset;
  }

 private:
  GgufFile() = default;
  static GgufFile parse_with(GgufReader& r, size_t size, const std::string& origin);
  void require_data(const char* what) const;
  [[noreturn]] void fail_key(const std::string& key, const GgufValue* v,
                             const char* expected) const;

  std::shared_ptr<const void> owner_;  // keeps the mapping or the bytes alive
  std::shared_ptr<const InputFile> header_file_;  // open_header: where tensors are read
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string origin_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<GgufKeyValue> metadata_;
  std::unordered_map<std::string, size_t> key_index_;
  std::vector<GgufTensorInfo> tensors_;
  std::unordered_map<std::string, size_t> tensor_index_;
};

// Parses a file held in memory (for the fuzz target and tests); see GgufFile::parse.
inline GgufFile parse_gguf(const uint8_t* data, size_t size, const std::string& origin) {
  return GgufFile::parse(data, size, origin);
}
inline GgufFile read_gguf(const std::string& path) { return GgufFile::open(path); }

}  // namespace atlas
