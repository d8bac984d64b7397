#pragma once
// Config of sparse attention patterns, an attention kind (core/config/attention_kind.h) held by
// ModelConfig; the "sparse" section, read, written and validated by
// core/variants/sparse/sparse_config.cpp (keys in docs/variants.md).
#include <cstdint>

namespace atlas {

// Which keys a query may see (seed 000, "Sparse Transformer" and "Image Transformer").
enum class SparsePattern { None, Strided, Fixed, Local1D, Local1DUnmasked, Local2D };
// How the two factors A(1), A(2) of strided/fixed are used (seed 000, "three ways"):
// Interleave = layer n uses A(n mod 2); Union = every head uses A(1) u A(2);
// PerHead = head h uses A(h mod 2).
enum class SparseCombine { Interleave, Union, PerHead };

struct SparseConfig {
  SparsePattern pattern = SparsePattern::None;  // None = dense attention (not a sparse kind)
  int64_t stride = 0;        // strided: l; 0 = "auto" = ceil(sqrt(L)) at run time
  int64_t block = 128;       // fixed: block l (paper: 128 or 256)
  int64_t summary = 8;       // fixed: c summary columns per block (paper: 8, 16, 32)
  bool per_head_summary = false;  // fixed: head h uses summary columns shifted by h*c (mod l)
  SparseCombine combine = SparseCombine::PerHead;  // seed 000: "often performs the best"
  int64_t block_length = 256;  // local1d / local1d_unmasked query block (image_transformer_base)
  int64_t filter_width = 100;  // local1d_unmasked: extra keys on each side of the block (t2t)
  int64_t query_h = 8, query_w = 16;  // local2d query block (t2t query_shape default 8x16)
  int64_t flange_h = 8, flange_w = 16;  // local2d memory flange (t2t memory_flange default)
  int64_t image_width = 32;  // local2d: positions are pixels in raster order, this many per row
  // Image input (core/input/image_input.h): 1 = one grey intensity per position; 3 = the R, G, B
  // values of each pixel as three positions (the Image Transformer's CIFAR-10 layout, 32 x 3).
  int64_t image_channels = 1;
};

}  // namespace atlas
