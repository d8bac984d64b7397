#pragma once
// Performer FAVOR+ (seed 003, "A Survey of Transformers"; google-research
// performer/fast_attention): positive orthogonal random features
//   phi(x) = m^(-1/2) exp(w_r . x' - |x'|^2 / 2),  x' = x / d^(1/4),  r = 1..m
// so that E[phi(q)^T phi(k)] = exp(q . k / sqrt(d)). Bidirectional:
//   out = phi(Q) (phi(K)^T V) / (phi(Q) (phi(K)^T 1));  causal: prefix sums over positions.
#include <cstdint>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/variants/performer/performer_config.h"
#include "core/tensor/tensor.h"

namespace atlas {

class ForwardPass;

// W [m, d]: rows of orthogonal blocks (QR of Gaussian d x d blocks), each row rescaled to the
// norm of an independent Gaussian d-vector (chi(d)), fixed by `seed`.
Mat orthogonal_features(int64_t m, int64_t d, uint64_t seed);

// The features of head `head` of attention layer `layer` of a Performer model: fixed by the
// config's seed, the layer and the head, the same for inference and training.
Mat performer_head_features(const PerformerConfig& performer, int64_t layer, int64_t head,
                            int64_t d_head);

// Every head's features of attention layer `layer` ([m, d_head] each).
std::vector<Mat> performer_layer_features(const PerformerConfig& performer, int64_t layer,
                                          int64_t heads, int64_t d_head);

// phi(X) [L, m] for X [L, d] (favor_features.h). Stabilised by subtracting `shift` from every exponent (the
// attention ratio cancels any shift that is constant per query row / over all keys).
Mat positive_features(const Mat& x, const Mat& w, bool per_row_shift);

// FAVOR+ attention of one head: q, k [L, d], v [L, dv] -> [L, dv]. key_valid may be empty.
Mat favor_attention(const Mat& q, const Mat& k, const Mat& v, const Mat& w, bool causal,
                    const std::vector<uint8_t>& key_valid = {});

// The implicit attention matrix rownorm(phi(Q) phi(K)^T) [Lq, Lk] (causal: lower triangle);
// keys with key_valid 0 get phi = 0 (a row with no weight stays 0).
Mat favor_implicit_attention(const Mat& q, const Mat& k, const Mat& w, bool causal,
                             const std::vector<uint8_t>& key_valid = {});

// Exact softmax(q k^T / sqrt(d)) [L, L], the reference for the error.
Mat exact_softmax_attention(const Mat& q, const Mat& k, bool causal);

struct ApproxError {
  double mean_abs = 0;  // mean over all (i, j) of |A_ij - B_ij|
  double max_tv = 0;    // max over rows of 0.5 sum_j |A_ij - B_ij|
};
ApproxError attention_error(const Mat& approx, const Mat& exact);

// The inference kernel of the Performer mechanism (mechanism.cpp, core/model/attention_kernel.h); traces the implicit attention as `<name>`
// [heads, L, L] when L <= 4096.
DTensor performer_attention_layer(ForwardPass& fp, const DTensor& q, const DTensor& k,
                                  const DTensor& v, const std::string& prefix,
                                  const std::string& traced_name, const AttentionMask& mask);

}  // namespace atlas
