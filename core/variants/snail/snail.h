#pragma once
// SNAIL (Mishra et al. 2018; seed 004): dense blocks of causal dilated temporal convolutions
// interleaved with causal attention blocks, host maths with seeded weights (core/variants/snail/snail.cpp).
//   DenseBlock(x, d, D):  xf = CausalConv(x, d), xg = CausalConv(x, d)   (kernel 2: x_t, x_{t-d})
//                         a = tanh(xf) * sigmoid(xg),  return [x, a]      (D new channels)
//   TCBlock(x, T, D):     DenseBlock with dilations 1, 2, 4, ..., 2^(n-1), n = ceil(log2 T)
//                         (paper_dilations: 2, 4, ..., 2^n, the paper's pseudo-code indexing)
//   AttentionBlock(x, K, V): q = x W_q, k = x W_k, v = x W_v, p = causal softmax(q k^T / sqrt K),
//                         return [x, p v]
// Layout: Attn, TC, Attn, TC, ..., Attn (tc_blocks TC blocks, one more attention block),
// as the paper's Omniglot / mini-ImageNet models.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/tensor/tensor.h"
#include "core/model/trace.h"

namespace atlas {

struct SnailSpec {
  int64_t d_input = 16;     // input channels (token embeddings)
  int64_t filters = 8;      // D of every dense block
  int64_t key_size = 16;    // K of every attention block
  int64_t value_size = 8;   // V of every attention block
  int64_t tc_blocks = 2;
  bool paper_dilations = false;
  uint64_t seed = 0;        // every weight is drawn from (seed, its name) unless given
  // T of the paper's TCBlock(x, T, D): the dilations come from T; 0 = from the input length.
  int64_t length = 0;
  // Trace the attention blocks as decoder.layer<b>.self_attn (the views' names, for the
  // snail model) instead of snail.attn<b>.
  bool view_names = false;
};

// A weight of the network by name and shape: snail.attn<b>.wq/.wk [K, c], .wv [V, c];
// snail.tc<b>.dense<k>.wf/.wg [D, 2c], .bf/.bg [1, D]. Empty = seeded matrices, zero biases.
using SnailWeights = std::function<Mat(const std::string& name, int64_t rows, int64_t cols)>;

// Dilations of one TC block over a sequence of length T.
std::vector<int64_t> snail_dilations(int64_t length, bool paper_dilations);

// One dense block; w_f, w_g are [D, 2 c] (columns 0..c-1 act on x_t, c..2c-1 on x_{t-d}).
Mat snail_dense_block(const Mat& x, int64_t dilation, const Mat& w_f, const RowVec& b_f,
                      const Mat& w_g, const RowVec& b_g);
// One causal attention block; w_q, w_k [K, c], w_v [V, c]. `probs` receives [L, L].
Mat snail_attention_block(const Mat& x, const Mat& w_q, const Mat& w_k, const Mat& w_v, Mat* probs);

// [L, L]: 1 where input position j can reach output position i through the convolutions
// (and the dense blocks' concatenated skips), not through attention: i - j is a sum of a
// subset of the dilations.
Mat snail_receptive_field(int64_t length, const std::vector<int64_t>& dilations);

// The inputs of `atlas snail` and the app's SNAIL explorer: one step per byte of `text`, each
// byte value a seeded unit-variance embedding row [L, d_input], and readable byte labels.
Mat snail_byte_embeddings(const SnailSpec& spec, const std::string& text);
std::vector<TokenInfo> snail_byte_tokens(const std::string& text);

// Runs the network on x [L, d_input]; traces snail.attn<i> [1, L, L] per attention block,
// snail.receptive_field [L, L] and snail.output [L, channels]. Returns the output.
Mat snail_forward(const SnailSpec& spec, const Mat& x, Trace* trace, const SnailWeights& weights = {});

// Calls visit(name, rows, cols) for every weight snail_forward reads, in order, for inputs of
// length spec.length (> 0); returns the channels of the output.
int64_t snail_visit_weights(const SnailSpec& spec,
                            const std::function<void(const std::string&, int64_t, int64_t)>& visit);

}  // namespace atlas
