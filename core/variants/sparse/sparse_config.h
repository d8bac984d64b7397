#pragma once
// Config of sparse and efficient attention (sparse patterns, Reformer LSH, Performer), read by
// efficient_attention_config.cpp from the nested "sparse", "lsh" and "performer" objects. Each is
// an attention kind (core/config/attention_kind.h); the reversible stack a stack kind.
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

// Reformer (seeds 000, 003; google/trax efficient_attention.py): LSH attention over shared-QK
// keys, in place of dense self-attention. Read from the "lsh" object, as is the reversible
// stack below.
struct LshConfig {
  int64_t n_rounds = 1;       // hash rounds (trax n_hashes default 1)
  int64_t n_buckets = 0;      // even >= 2, or 1 = no hashing; 0 = auto: 2 max(1, L / chunk)
  int64_t chunk_length = 128; // queries per chunk (trax default)
  uint64_t seed = 0;          // random rotations, fixed per layer / head / round
};

// Reformer's reversible residual stack: Y1 = X1 + Attn(X2), Y2 = X2 + FF(Y1), exit
// mean(Y1, Y2), with or without LSH attention. A stack kind (core/config/stack_kind.h), chosen by
// the "lsh" object's "reversible": true.
struct ReversibleConfig {
  int64_t ff_chunks = 1;  // feed-forward applied to this many row chunks (same output)
};

// Performer FAVOR+ (seed 003; google-research performer/fast_attention): softmax attention
// approximated by positive orthogonal random features. Read from the "performer" object.
struct PerformerConfig {
  int64_t features = 256;  // m (google-research default)
  uint64_t seed = 0;       // the random features are fixed by (seed, layer, head)
};

}  // namespace atlas
