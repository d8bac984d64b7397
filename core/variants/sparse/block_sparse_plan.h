#pragma once
// How block_sparse_attention (block_sparse_attention.h) computes one head's pattern: the pattern
// as runs of consecutive keys, its rows in groups with each group's key union, and for every tile
// of 16 rows which of its rows see each column. Built once per pattern; patterns with a recipe
// (CsrPattern::recipe, set by layer_patterns) keep their plan for the next calls, so the layers
// of a model and the keystrokes of a session plan a pattern once.
#include <cstdint>
#include <memory>
#include <vector>

#include "core/variants/sparse/block_sparse_attention.h"
#include "core/variants/sparse/sparse_pattern.h"

namespace atlas::block_sparse {

// Keys [key, key + length) of one row.
struct KeyRange {
  int32_t key, length;
};

// A pattern's rows as runs of consecutive keys: row i's are runs[row_begin[i] .. row_begin[i+1]).
// Block-local and summary patterns have a few long runs per row, so grouping and tiling work
// over runs rather than nonzeros.
struct PatternRuns {
  std::vector<KeyRange> runs;
  std::vector<int64_t> row_begin;
};

// Which rows of each tile see each column of its group's union, for every group dense enough
// for tiles (a group below kMinTileDensity is computed per nonzero): group g's tile t at
// bits[begin[g] + t * columns_g], columns_g its union rounded up to 16, bit r for the tile's row
// r. Computed once per pattern and read by every head that has it.
struct ColumnMasks {
  std::vector<uint16_t> bits;
  std::vector<int64_t> begin;  // -1: the group is computed per nonzero
};

struct HeadPlan {
  PatternRuns runs;
  RowGrouping grouping;
  ColumnMasks masks;
  std::vector<int64_t> indptr;  // the pattern's, checked when a cached plan is found by recipe
};

// The plan of `pattern`: a cached one when a pattern with the same recipe and the same rows was
// planned recently, else built now (and cached when the pattern has a recipe). Thread-safe.
std::shared_ptr<const HeadPlan> head_plan(const CsrPattern& pattern);

// The plan's parts, for group_rows and sparse_tiles.
PatternRuns key_runs(const CsrPattern& p);
RowGrouping choose_grouping(const CsrPattern& p, const PatternRuns& runs);

}  // namespace atlas::block_sparse
