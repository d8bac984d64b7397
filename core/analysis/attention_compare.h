#pragma once
// Comparing two runs' attention: two inputs on one model (a counterfactual: "John gave Mary"
// against "Mary gave John"), or one input on two models of the same shape (two training
// checkpoints, a model and its fine-tune). Maps are matched by their catalogue name
// (attention_array_name) and must have the same shape: the same number of tokens.
//
// Per head, the distance between A's and B's map is the mean over query rows of the total
// variation distance TV_i = 1/2 sum_j |A_ij - B_ij| (0 = identical rows, 1 = disjoint
// supports), and the largest single-cell |A_ij - B_ij|.
#include <cstdint>
#include <string>
#include <vector>

#include "core/analysis/head_table.h"
#include "core/model/trace.h"

namespace atlas {

struct HeadDifference {
  AttentionMap map;  // A's catalogue entry
  int64_t head = 0;
  double mean_tv = 0.0;
  double max_abs = 0.0;
};

// Every stored map of A (dense, or the CSR nonzeros of a sparse map) that B has under the same
// name with the same shape, per head, in A's catalogue order. Throws AtlasError naming the first
// mismatch when no map can be compared (different token counts, different architectures).
std::vector<HeadDifference> compare_attention(const Trace& a, const Trace& b);

// mean_tv laid out as one [layers, heads] table per map family (head_table.h).
std::vector<HeadTable> head_difference_tables(const std::vector<HeadDifference>& rows);

// A - B of one head's map [Lq, Lk]: both runs must store `array` (dense or CSR) with the same shape.
Tensor attention_difference(const Trace& a, const Trace& b, const std::string& array, int64_t head);

}  // namespace atlas
