#pragma once
// safetensors checkpoints (huggingface/safetensors): u64 little-endian header length N, N bytes
// of JSON (may be space padded), then one flat data buffer. Each header entry is
// {"dtype", "shape", "data_offsets": [begin, end)} relative to the data start; the optional
// "__metadata__" entry is a string -> string map. Reading is strict: offsets must tile the
// buffer exactly, so a truncated or hand-edited file is caught here, not as garbage weights.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/tensor/tensor.h"

namespace atlas {

struct SafetensorsFile {
  std::map<std::string, Tensor> tensors;            // converted to float32
  std::map<std::string, std::string> metadata;      // "__metadata__" string map (may be empty)
  std::map<std::string, std::string> source_dtype;  // tensor name -> "F32"/"F16"/"BF16"/...
  std::map<std::string, Shape> unread;  // validated, but not converted (read_safetensors' skip)
};

// Parses an in-memory file. `origin` (usually the path) starts every error message.
// Readable dtypes: F32, F16, BF16, F64, I64, I32, I16, I8, U64, U32, U16, U8, BOOL.
SafetensorsFile parse_safetensors(const uint8_t* data, size_t size, const std::string& origin);

// Memory-maps `path` and parses it, so a large checkpoint is converted straight from the page
// cache without first being copied into a heap buffer.
// Tensors for which `skip(name)` holds are checked like the others but not converted (saved
// buffers a loader would drop: GPT-2's 48 MB of mask buffers); they are listed in `unread`.
// Matrices (2-D) stored as F16 or BF16 for which `keep_encoded(name)` holds are not converted:
// they are read in place (Tensor::packed, ggml's F16 / BF16 rows), the mapping kept alive.
SafetensorsFile read_safetensors(const std::string& path,
                                 const std::function<bool(const std::string&)>& skip = {},
                                 const std::function<bool(const std::string&)>& keep_encoded = {});

// A file's header alone: each tensor's name, dtype, shape and bytes (checked to tile the data
// buffer exactly, as read_safetensors checks them) and __metadata__, read without mapping or
// reading the tensors' data, so a checkpoint is sized before it is loaded.
struct SafetensorsHeader {
  struct TensorInfo {
    std::string name, dtype;  // dtype: "F32", "BF16", ...
    Shape shape;
    uint64_t bytes = 0, element_bytes = 0;
  };
  std::vector<TensorInfo> tensors;  // in data order
  std::map<std::string, std::string> metadata;
  uint64_t file_size = 0;
};
SafetensorsHeader read_safetensors_header(const std::string& path);
// The same over the first `available` bytes of a file of `file_size` bytes (an embedded demo).
SafetensorsHeader parse_safetensors_header(const uint8_t* data, size_t available,
                                           uint64_t file_size, const std::string& origin);

// Writes every tensor as F32, keys sorted, header padded with spaces to a multiple of 8.
// The file is written to a temporary sibling and renamed, so a crash never leaves a torn file.
void write_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                       const std::map<std::string, std::string>& metadata);

// The bytes write_safetensors would write.
std::vector<uint8_t> encode_safetensors(const std::map<std::string, Tensor>& tensors,
                                        const std::map<std::string, std::string>& metadata);

// Exact IEEE conversions (subnormals, infinities and NaN payloads preserved).
float half_to_float(uint16_t h);
float bf16_to_float(uint16_t b);

}  // namespace atlas
