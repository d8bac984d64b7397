#pragma once
// A weight matrix held in its file's encoding, where it lies: ggml's block types from a GGUF file
// (Q8_0, Q4_K, ...), float16 / bfloat16 from safetensors, or float32 read in place, usually
// inside a memory-mapped checkpoint. The engine never copies such a matrix to float32 as a
// whole (an 8B model would need 32 GB): the CPU backend multiplies by it block by block
// (core/backend/quant_matmul.h), the embedding converts only the rows it gathers, and an
// analysis that needs a weight's values converts the rows it reads (dequantize_rows in
// core/formats/ggml_types.h).
#include <cstdint>
#include <memory>

namespace atlas {

struct PackedMatrix {
  uint32_t type = 0;           // ggml type id (core/formats/ggml_types.h): 0 F32, 1 F16, 8 Q8_0, ...
  int64_t rows = 0, cols = 0;  // engine order [rows, cols]; a row is `cols` values in whole blocks
  int64_t row_bytes = 0;       // bytes of one row
  const uint8_t* data = nullptr;      // rows * row_bytes bytes; row r starts at data + r * row_bytes
  std::shared_ptr<const void> owner;  // keeps the bytes alive (the file mapping)

  int64_t bytes() const { return rows * row_bytes; }
  const uint8_t* row(int64_t r) const { return data + r * row_bytes; }
  // Rows [begin, end) as a matrix of their own (rows are whole blocks, so no bytes move).
  PackedMatrix row_range(int64_t begin, int64_t end) const {
    PackedMatrix m = *this;
    m.rows = end - begin;
    m.data = row(begin);
    return m;
  }
};

}  // namespace atlas
