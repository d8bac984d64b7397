// Packed weights read a few rows at a time (packed_weights.h).
#include "core/formats/packed_weights.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/formats/ggml_types.h"
#include "core/formats/safetensors.h"  // half_to_float, bf16_to_float
#include "core/tensor/error.h"

namespace atlas {

namespace {

uint16_t le16(const uint8_t* p) { return uint16_t(p[0] | (p[1] << 8)); }

// Where a block keeps its float16 scales, and how far |value| can reach per unit of each:
// |x| <= |d| * d_reach + |m| * m_reach.
struct ScaleLayout {
  int d_at = 0, m_at = -1;  // byte offsets in the block; m_at < 0: no minimum
  double d_reach = 0, m_reach = 0;
};

ScaleLayout scale_layout(uint32_t type) {
  switch (type) {
    case ggml_type::Q8_0: return {0, -1, 128, 0};           // int8 q
    case ggml_type::Q4_0: return {0, -1, 8, 0};             // q - 8 in [-8, 7]
    case ggml_type::Q4_1: return {0, 2, 15, 1};             // d q + m, q in [0, 15]
    case ggml_type::Q5_0: return {0, -1, 16, 0};            // q - 16 in [-16, 15]
    case ggml_type::Q5_1: return {0, 2, 31, 1};             // d q + m, q in [0, 31]
    case ggml_type::Q4_K: return {0, 2, 63.0 * 15, 63};     // d sc q - dmin mn, 6-bit sc and mn
    case ggml_type::Q5_K: return {0, 2, 63.0 * 31, 63};
    case ggml_type::Q6_K: return {208, -1, 128.0 * 32, 0};  // d sc (q - 32), int8 sc
    default: return {};
  }
}

// 16-bit floats scanned on their bit patterns: non-finite iff the exponent bits are all ones.
FloatScan scan_16bit(const uint8_t* p, int64_t n, uint16_t exponent_mask, bool bf16) {
  int64_t bad = 0;
  uint16_t worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t v = le16(p + 2 * i) & 0x7fff;
    const bool finite = (v & exponent_mask) != exponent_mask;
    bad += finite ? 0 : 1;
    worst = finite ? std::max(worst, v) : worst;  // |v| orders like its bit pattern
  }
  return {bad, bf16 ? bf16_to_float(worst) : half_to_float(worst)};
}

FloatScan scan_packed(const PackedMatrix& m) {
  const GgmlTypeInfo info = ggml_type_info(m.type);
  const int64_t blocks_per_row = m.cols / info.block_elems;
  FloatScan total;
  // Rows split over the threads; each keeps its own tally.
#pragma omp parallel
  {
    FloatScan mine;
#pragma omp for schedule(static)
    for (int64_t r = 0; r < m.rows; ++r) {
      const uint8_t* row = m.row(r);
      FloatScan s;
      if (m.type == ggml_type::F32) {
        s = scan_floats(reinterpret_cast<const float*>(row), m.cols);
      } else if (m.type == ggml_type::F16) {
        s = scan_16bit(row, m.cols, 0x7c00, false);
      } else if (m.type == ggml_type::BF16) {
        s = scan_16bit(row, m.cols, 0x7f80, true);
      } else {
        const ScaleLayout l = scale_layout(m.type);
        double reach = 0;
        for (int64_t b = 0; b < blocks_per_row; ++b) {
          const uint8_t* block = row + b * info.block_bytes;
          const float d = half_to_float(le16(block + l.d_at));
          const float mn = l.m_at >= 0 ? half_to_float(le16(block + l.m_at)) : 0.0f;
          if (!std::isfinite(d) || !std::isfinite(mn)) {
            s.non_finite += info.block_elems;
            continue;
          }
          reach = std::max(reach, std::fabs(double(d)) * l.d_reach + std::fabs(double(mn)) * l.m_reach);
        }
        s.max_abs = float(std::min(reach, double(3.4028234e38f)));
      }
      mine.non_finite += s.non_finite;
      mine.max_abs = std::max(mine.max_abs, s.max_abs);
    }
#pragma omp critical
    {
      total.non_finite += mine.non_finite;
      total.max_abs = std::max(total.max_abs, mine.max_abs);
    }
  }
  return total;
}

}  // namespace

Tensor packed_tensor(PackedMatrix m) {
  Tensor t;
  t.shape = {m.rows, m.cols};
  t.packed = std::make_shared<const PackedMatrix>(std::move(m));
  return t;
}

void dequantize_rows(const PackedMatrix& m, int64_t first, int64_t count, float* out) {
  if (first < 0 || count < 0 || first + count > m.rows)
    throw AtlasError("internal: rows [" + std::to_string(first) + ", " + std::to_string(first + count) +
                     ") of a packed weight with " + std::to_string(m.rows) + " rows");
  const GgmlTypeInfo info = ggml_type_info(m.type);
  const int64_t blocks = m.cols / info.block_elems;
  for (int64_t r = 0; r < count; ++r)
    dequantize_ggml(m.type, m.row(first + r), blocks, out + r * m.cols);
}

Tensor to_float(const Tensor& t) {
  if (!t.packed) return t;
  Tensor out = Tensor::uninitialized(t.shape);
  const PackedMatrix& m = *t.packed;
  const GgmlTypeInfo info = ggml_type_info(m.type);
  // One call over all rows: the dequantizer splits the blocks over the threads.
  dequantize_ggml(m.type, m.data, m.rows * (m.cols / info.block_elems), out.data.data());
  return out;
}

FloatScan scan_weights(const Tensor& t) {
  return t.packed ? scan_packed(*t.packed) : scan_floats(t.data.data(), t.numel());
}

int64_t held_bytes(const Tensor& t) {
  return t.packed ? t.packed->bytes() : int64_t(t.data.size() * sizeof(float));
}

const char* held_type_name(const PackedMatrix& m) {
  const char* name = ggml_type_info(m.type).name;
  return name ? name : "an unknown type";
}

const char* held_type_name(const Tensor& t) { return t.packed ? held_type_name(*t.packed) : "F32"; }

HeldWeights held_weights(const std::map<std::string, Tensor>& params) {
  std::map<std::string, HeldWeights::Encoding> by_name;
  HeldWeights out;
  for (const auto& [name, t] : params) {
    HeldWeights::Encoding& e = by_name[held_type_name(t)];
    e.type = held_type_name(t);
    e.bytes += double(held_bytes(t));
    e.tensors += 1;
    out.total_bytes += double(held_bytes(t));
  }
  for (auto& [name, e] : by_name) {
    out.quantized |= name != "F32" && name != "F16" && name != "BF16";
    out.by_type.push_back(std::move(e));
  }
  return out;
}

}  // namespace atlas
