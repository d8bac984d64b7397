#pragma once
// Numbers float32 arithmetic cannot carry: weights so large that a forward can overflow, and
// runs whose output holds NaN or Inf. A loaded file may hold any finite float; a run on such
// weights prints NaN predictions unless someone says why.
//
// The bound. Let M be the largest |w| of a model and n the longest dot product a weight takes
// part in. A matrix product x W sums over the rows of W, so n is at most the largest dimension
// of any weight tensor. The first place two weight-sized factors meet is such a sum of n terms,
// each up to M^2: a LayerNorm's variance of an embedding row (sum_i (x_i - mean)^2), or an
// embedding row times a projection in the residual stream. It stays finite for every input only
// when n M^2 <= FLT_MAX, so
//     M_max = sqrt(FLT_MAX / n)   (n = 768: 6.6e17; n = 50257, GPT-2's vocabulary: 8.2e16).
// Above it some input overflows to Inf, and Inf - Inf (softmax, LayerNorm) becomes NaN. Below
// it longer chains can still overflow (a score multiplies two projections), so the bound is an
// early, named explanation, not a guarantee: the guarantee is output_warnings() on the run.
// Trained weights sit many orders below (an fp16 checkpoint cannot even hold more than 65504),
// so a real model never triggers it. Non-finite weights are reported by check_params.
#include <cstdint>
#include <string>
#include <vector>

#include "core/model/model.h"

namespace atlas {

// sqrt(FLT_MAX / n), n = the largest dimension of any tensor in `params` (at least 1).
double weight_overflow_bound(const ParamStore& params);

// One line per tensor whose largest finite |w| exceeds `bound`, naming the tensor, the value and
// its index: "weights: tensor encoder.layer0.attn.wq holds -3e+20 at [3, 5], above 6.6e+17 ...".
// At most `max_lines` tensors are listed, then "and N more tensors".
std::vector<std::string> check_weight_magnitudes(const ParamStore& params, double bound,
                                                 size_t max_lines = 4);
// Both of the above for a loaded model.
std::vector<std::string> weight_warnings(const Model& model);

struct NonFiniteCount {
  int64_t nan = 0, pos_inf = 0, neg_inf = 0;
  int64_t first = -1;  // flat index of the first non-finite value, -1 if none
  int64_t total() const { return nan + pos_inf + neg_inf; }
};
NonFiniteCount count_non_finite(const Tensor& t);

// Empty when the run's output (logits or hidden states) is finite; else one line saying how
// many values are NaN / Inf, where the first is, and that predictions from it are meaningless.
std::vector<std::string> output_warnings(const RunResult& result);

}  // namespace atlas
