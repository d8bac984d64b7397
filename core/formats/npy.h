#pragma once
// NumPy .npy arrays (numpy/lib/format.py): "\x93NUMPY", version bytes, a little-endian header
// length (u16 in v1, u32 in v2/v3), a Python dict literal
// "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }" padded with spaces and a final
// '\n' so the data starts on a 64-byte boundary, then the raw C-order data.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/formats/atomic_file.h"
#include "core/tensor/tensor.h"
#include "core/model/trace.h"

namespace atlas {

// Version 1.0 ('<f4' or '<i4', C order); falls back to 2.0 only when the header would not fit
// a u16 length. An I32 tensor must hold integral values within int32 range.
std::vector<uint8_t> encode_npy(const Tensor& t, DType dtype);
// The magic, version and header of a .npy holding `shape` (C order): what precedes its data,
// for writers that stream the data after it (little-endian float32 or int32 values).
std::vector<uint8_t> npy_header(const Shape& shape, DType dtype);
void write_npy(const std::string& path, const Tensor& t, DType dtype);  // atomic (tmp + rename)

// Accepts versions 1, 2 and 3 with descr <f4 <f8 <f2 <i8 <i4 <i2 |i1 <u8 <u4 <u2 |u1 |b1 in
// C order, converted to float32. Rejects Fortran order, big-endian data, structured dtypes,
// truncated or over-long data and shapes whose byte count overflows. `origin` (usually the
// path) starts every error message.
Tensor decode_npy(const uint8_t* data, size_t size, const std::string& origin);
Tensor read_npy(const std::string& path);


}  // namespace atlas
