#pragma once
// The inner kernel of block_sparse_attention (block_sparse_attention.h): sixteen query rows at a
// time against a group's keys, with the rows as the sixteen lanes of a vector. The scores, the
// masked softmax and the weighted values are then all lane-wise ("vertical") operations: a
// softmax over a row is a max, an exp and a sum down a column of vectors, never a horizontal
// reduction, and a row's own pattern is a bit per lane. Keys come in blocks of 16; a block none
// of the tile's rows sees is skipped, so a tile costs the blocks its rows touch, not the group's
// whole key union.
//   S[r, c] = q_r . k_c                                      (blocks the tile touches)
//   P[r, c] = softmax over the row's own columns of scale S[r, c], exactly 0 elsewhere
//   out_r   = sum_c P[r, c] v_c
#include <cstdint>
#include <vector>

#include <Eigen/Core>

namespace atlas::tile_kernel {

constexpr int kLanes = 16;  // rows per tile, keys per block

using AlignedFloats = std::vector<float, Eigen::aligned_allocator<float>>;

// A group's keys and values packed for the tile kernel: key block b as [d_k][16] (the 16 keys
// side by side, zero past the last key), values as rows of `value_stride` floats (zero-padded to
// a multiple of 16, zero rows past the last key).
struct PackedKeys {
  int64_t keys = 0, blocks = 0, dk = 0, dv = 0, value_stride = 0;
  AlignedFloats kt, v;
};

// keys[0..n) are row indices of k (row stride k_stride floats, the head's d_k floats at offset
// 0 of the pointer given) and of v (stride v_stride, d_v floats).
void pack_keys(const float* k, int64_t k_stride, const float* v, int64_t v_stride, const int32_t* keys,
               int64_t n, int64_t dk, int64_t dv, PackedKeys& out);

// Per-thread buffers of attend_tile.
struct TileScratch {
  AlignedFloats qt;        // [d_k][16]: the tile's queries, rows as lanes
  AlignedFloats p;         // [blocks * 16][16]: scores, then exp(score - row max), by column
  alignas(64) float inverse_sum[16];  // per row, 1 / the sum of its exponentials
  std::vector<int32_t> used_blocks;
};

// Rows q_rows[0..n) (n <= 16; each d_k floats) of one head against `keys`. column_rows[c] has
// bit r set when row r sees column c of the group (c < keys.blocks * 16). Writes each row's d_v
// outputs to out_rows[r] (a row that sees nothing gets zeros). Afterwards row r's probability of
// column c is scratch.p[c * 16 + r] * scratch.inverse_sum[r], for every column of a block in
// scratch.used_blocks.
void attend_tile(const PackedKeys& keys, const float* const* q_rows, int n, const uint16_t* column_rows,
                 float scale, float* const* out_rows, TileScratch& scratch);

}  // namespace atlas::tile_kernel
