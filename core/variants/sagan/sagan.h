#pragma once
// Self-Attention GAN block (Zhang et al. 2019; seed 004) on an image feature map, host maths.
// x [N = H W positions, C channels] (a seeded 1x1 "stem" conv lifts RGB in [0, 1] to C):
//   f = x W_f^T [N, C/8] (keys)   g = x W_g^T [N, C/8] (queries)   h = x W_h^T [N, C/2] (values)
//   optional 2x2 max-pooling of f and h over the map (the reference code's key/value pooling:
//   keys and values come from (H/2)(W/2) positions)
//   beta_{j,i} = softmax_i(f_i . g_j)      attention of query location j over key location i
//   o_j = W_v (sum_i beta_{j,i} h_i) [C]   y_j = x_j + gamma o_j
// The value width C/2 and the pooling follow the authors' TensorFlow code
// (brain-research/self-attention-gan, sn_non_local_block_sim); gamma starts at 0 in training,
// which makes the block the identity.
#include <cstdint>
#include <vector>

#include "core/config/config.h"
#include "core/model/model.h"
#include "core/model/params.h"
#include "core/input/rgb_image.h"

namespace atlas {

// The built-in test card (a gradient sky, a disc and a bar), so presets run without a file.
RgbImage sagan_synthetic_image(int64_t size);

struct SaganWeights {
  Mat f, g;      // [C/8, C]
  Mat h;         // [Cv, C]
  Mat v;         // [C, Cv]
  float gamma = 0.0f;
};

struct SaganResult {
  Mat attention;  // [N, Nk] rows = query locations j, columns = key locations i
  Mat output;     // y [N, C]
  int64_t key_height = 0, key_width = 0;  // H, W or the pooled H/2, W/2
};

// 2x2 max-pooling with stride 2 over an [H W, C] map (odd edges dropped, as VALID pooling).
Mat max_pool_2x2(const Mat& x, int64_t height, int64_t width);
SaganResult sagan_block(const Mat& x, int64_t height, int64_t width, const SaganWeights& w, bool pool);

std::vector<ParamSpec> sagan_param_specs(const ModelConfig& c);
// Runs the stem and the block on `image` (resized to config.sagan()->image_size) and traces
// sagan.image [H, W, 3], sagan.features [C, H, W], sagan.attention [1, HW, HWk],
// sagan.gamma [1], sagan.output [C, H, W]. The output tensor is y [HW, C].
RunResult sagan_forward(const ModelConfig& c, const ParamStore& params, const RgbImage& image,
                        const RunOptions& options);

}  // namespace atlas
