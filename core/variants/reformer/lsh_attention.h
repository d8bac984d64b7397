#pragma once
// Reformer (seeds 000, 003; google/trax layers/research/efficient_attention.py):
//   LSH attention  h(x) = argmax([x R ; -x R]),  R ~ N(0, 1) of shape [d_head, n_buckets / 2]
//   per round; shared-QK keys k_j = q_j / |q_j|; positions sorted by (bucket, position);
//   chunks of m sorted queries attend to their own and the previous chunk (the first wraps to
//   the last); self only when nothing else is available (self logit = -1e5, not -inf); causal
//   masks by original position; rounds combined by  o_i = sum_r exp(lse_r(i) - logsumexp_r
//   lse_r(i)) o_r(i)  (no duplicate correction, as trax).
//   Reversible block  Y1 = X1 + Attn(X2), Y2 = X2 + FF(Y1);  inverse X2 = Y2 - FF(Y1),
//   X1 = Y1 - Attn(X2).  Chunked feed-forward: FF applied to row chunks (same output).
#include <functional>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/variants/reformer/reformer_config.h"
#include "core/tensor/tensor.h"
#include "core/variants/sparse/sparse_pattern.h"

namespace atlas {

class ForwardPass;

struct LshParams {
  int64_t n_rounds = 1, n_buckets = 2, chunk_length = 128;
  bool causal = false;
  uint64_t seed = 0;  // rotations of head h, round r come from (seed, layer, h, r)
  int64_t layer = 0;
  const std::vector<uint8_t>* key_valid = nullptr;  // padding keys skipped; nullptr = all valid
};

// Resolved bucket count: n_buckets, or 2 max(1, L / chunk) when 0 (trax's default).
int64_t lsh_buckets(int64_t configured, int64_t length, int64_t chunk_length);

// The hashing of attention layer `layer` over `length` queries under the config: rounds, chunk,
// resolved bucket count and seed (inference and training alike). key_valid: may be null.
LshParams lsh_params(const LshConfig& lsh, int64_t length, int64_t layer, bool causal,
                     const std::vector<uint8_t>* key_valid);

// Random rotation R [d, n_buckets / 2] of one (layer, head, round).
Mat lsh_rotation(const LshParams& p, int64_t head, int64_t round, int64_t d);
// Bucket of every row of x [L, d] under rotation R: argmax over [x R, -x R] (0 when 1 bucket).
std::vector<int32_t> lsh_hash(const Mat& x, const Mat& R, int64_t n_buckets);

// For training (core/train/train_model_impl.h): how many of the n_rounds rounds let query i see key j,
// [L * L] row-major, for one head whose shared-QK keys are `k_unit` (rows of unit length).
// The rounds' softmaxes combined by their logsumexps (lsh_attention_head) equal one softmax
// over every (round, key) pair, i.e. over the keys with log(count) added to their logits.
std::vector<int32_t> lsh_key_counts(const Mat& k_unit, const LshParams& p, int64_t head);

struct LshHeadTrace {
  std::vector<std::vector<int32_t>> buckets;  // [rounds][L]
  std::vector<std::vector<int32_t>> order;    // [rounds][L]: positions in sorted order
  CsrPattern pattern;                          // combined attention over all rounds
  std::vector<float> probs;                   // [nnz], rows sum to 1
};

// One head: qk [L, d] (shared queries/keys, keys normalised inside), v [L, dv] -> [L, dv].
Mat lsh_attention_head(const Mat& qk, const Mat& v, float scale, const LshParams& p,
                       int64_t head, LshHeadTrace* trace);

// The inference kernel of the LSH mechanism (mechanism.cpp, core/model/attention_kernel.h) (q also serves as the keys); traced as
// `<name>.round<r>.buckets` / `.order` [heads, L], `<name>.chunks` [n_chunks + 1] and the
// combined attention as `<name>.indptr/.indices/.values/.allowed` (+ dense when L <= 4096).
DTensor lsh_attention_layer(ForwardPass& fp, const DTensor& q, const DTensor& v,
                            const std::string& prefix, const std::string& traced_name,
                            const AttentionMask& mask);

// Reversible residual block on device tensors.
using Sublayer = std::function<DTensor(const DTensor&)>;
void reversible_forward(Backend& be, const Sublayer& attn, const Sublayer& ff, DTensor& x1,
                        DTensor& x2);  // in place: (X1, X2) -> (Y1, Y2)
void reversible_inverse(Backend& be, const Sublayer& attn, const Sublayer& ff, DTensor& y1,
                        DTensor& y2);  // in place: (Y1, Y2) -> (X1, X2)

// f applied to `chunks` row blocks of x [L, d], rows concatenated back.
DTensor chunked_rows(Backend& be, const DTensor& x, int64_t chunks, const Sublayer& f);

// A reversible stack for ForwardPass::encoder / decoder (lsh.reversible): entry (x, x), exit
// the mean of the two streams, then the final norm of a pre-norm model.
DTensor reversible_stack(ForwardPass& fp, DTensor x, const std::string& stack, int64_t layers,
                         const AttentionMask& mask, const std::string& attn_name);

}  // namespace atlas
