// Self-Attention GAN block (equations in sagan.h).
#include "core/variants/sagan/sagan.h"

#include <algorithm>
#include <cmath>

#include "core/tensor/error.h"
#include "core/variants/sagan/sagan_arrays.h"
#include "core/model/params.h"

namespace atlas {

namespace {

int64_t qk_channels(const ModelConfig& c) { return std::max<int64_t>(1, c.sagan()->channels / 8); }
int64_t value_channels(const ModelConfig& c) { return std::max<int64_t>(1, c.sagan()->channels / 2); }

// [H W, C] -> [C, H, W] (channel-major, as image feature maps are usually stored).
Tensor channel_major(const Mat& x, int64_t height, int64_t width) {
  const int64_t C = x.cols(), N = height * width;
  Tensor t({C, height, width});
  for (int64_t n = 0; n < N; ++n)
    for (int64_t ch = 0; ch < C; ++ch) t.data[size_t(ch * N + n)] = x(n, ch);
  return t;
}

}  // namespace

RgbImage sagan_synthetic_image(int64_t size) {
  RgbImage img{size, size, std::vector<uint8_t>(size_t(size * size * 3))};
  for (int64_t y = 0; y < size; ++y)
    for (int64_t x = 0; x < size; ++x) {
      const double u = (x + 0.5) / double(size), v = (y + 0.5) / double(size);
      double r = 0.35 + 0.3 * v, g = 0.55 + 0.25 * v, b = 0.95 - 0.2 * v;  // sky
      if ((u - 0.35) * (u - 0.35) + (v - 0.4) * (v - 0.4) < 0.04) r = 0.95, g = 0.75, b = 0.15;  // disc
      if (v > 0.72 && v < 0.85 && u > 0.5 && u < 0.92) r = 0.2, g = 0.5, b = 0.2;             // bar
      uint8_t* px = &img.rgb[size_t((y * size + x) * 3)];
      px[0] = uint8_t(std::lround(r * 255));
      px[1] = uint8_t(std::lround(g * 255));
      px[2] = uint8_t(std::lround(b * 255));
    }
  return img;
}

Mat max_pool_2x2(const Mat& x, int64_t height, int64_t width) {
  const int64_t ph = height / 2, pw = width / 2;
  Mat out(ph * pw, x.cols());
  for (int64_t y = 0; y < ph; ++y)
    for (int64_t xx = 0; xx < pw; ++xx) {
      const int64_t a = (2 * y) * width + 2 * xx, b = (2 * y + 1) * width + 2 * xx;
      out.row(y * pw + xx) = x.row(a).cwiseMax(x.row(a + 1)).cwiseMax(x.row(b)).cwiseMax(x.row(b + 1));
    }
  return out;
}

SaganResult sagan_block(const Mat& x, int64_t height, int64_t width, const SaganWeights& w, bool pool) {
  if (x.rows() != height * width) throw AtlasError("SAGAN feature map has the wrong number of positions");
  if (pool && (height < 2 || width < 2)) throw AtlasError("SAGAN 2x2 pooling needs a map of at least 2 x 2");
  SaganResult r;
  const Mat g = x * w.g.transpose();  // queries [N, C/8]
  Mat f = x * w.f.transpose();        // keys    [N, C/8]
  Mat h = x * w.h.transpose();        // values  [N, Cv]
  r.key_height = height;
  r.key_width = width;
  if (pool) {
    f = max_pool_2x2(f, height, width);
    h = max_pool_2x2(h, height, width);
    r.key_height = height / 2;
    r.key_width = width / 2;
  }
  r.attention = g * f.transpose();  // [N, Nk] scores f_i . g_j
  for (int64_t j = 0; j < r.attention.rows(); ++j) {
    auto row = r.attention.row(j);
    row = (row.array() - row.maxCoeff()).exp().matrix();
    row /= row.sum();
  }
  const Mat o = (r.attention * h) * w.v.transpose();  // [N, C]
  r.output = x + w.gamma * o;
  return r;
}

std::vector<ParamSpec> sagan_param_specs(const ModelConfig& c) {
  const int64_t C = c.sagan()->channels, d = qk_channels(c), cv = value_channels(c);
  return {{"sagan.stem.w", {C, 3}},
          {"sagan.stem.b", {C}, InitKind::Zeros},
          {"sagan.f.w", {d, C}},
          {"sagan.g.w", {d, C}},
          {"sagan.h.w", {cv, C}},
          {"sagan.v.w", {C, cv}},
          {"sagan.gamma", {1}, InitKind::Constant, c.sagan()->gamma}};
}

RunResult sagan_forward(const ModelConfig& c, const ParamStore& p, const RgbImage& image_in,
                        const RunOptions& options) {
  const int64_t S = c.sagan()->image_size, N = S * S;
  const RgbImage image = resize_rgb(image_in, S);
  Mat rgb(N, 3);
  for (int64_t n = 0; n < N; ++n)
    for (int k = 0; k < 3; ++k) rgb(n, k) = float(image.rgb[size_t(n * 3 + k)]) / 255.0f;
  const ConstMatMap stem = required_param(p, "sagan.stem.w").mat();
  const Eigen::Map<const RowVec> stem_b(required_param(p, "sagan.stem.b").data.data(),
                                        c.sagan()->channels);
  const Mat x = (rgb * stem.transpose()).rowwise() + stem_b;  // [N, C]
  SaganWeights w{required_param(p, "sagan.f.w").mat(), required_param(p, "sagan.g.w").mat(),
                 required_param(p, "sagan.h.w").mat(), required_param(p, "sagan.v.w").mat(),
                 required_param(p, "sagan.gamma").data[0]};
  if (options.cancel && options.cancel->load()) throw Cancelled();
  const SaganResult r = sagan_block(x, S, S, w, c.sagan()->pool_keys);

  RunResult result;
  result.output = Tensor::from_mat(r.output);
  Trace& t = result.trace;
  // One "token" per query location, labelled (row, column), so the heatmap view has labels.
  for (int64_t n = 0; n < N; ++n)
    t.source_tokens.push_back({int32_t(n), "(" + std::to_string(n / S) + "," + std::to_string(n % S) + ")"});
  if (options.trace.attention) {
    Tensor img({S, S, 3});
    for (size_t i = 0; i < img.data.size(); ++i) img.data[i] = float(image.rgb[i]) / 255.0f;
    t.add(sagan_arrays::kImage, "input image resized, RGB in [0, 1] [H, W, 3]", std::move(img));
    t.add(sagan_arrays::kFeatures, "stem features x [C, H, W]", channel_major(x, S, S));
    Tensor att({1, N, r.attention.cols()});
    std::copy(r.attention.data(), r.attention.data() + r.attention.size(), att.data.begin());
    const int64_t keys = att.shape[2];
    t.add(sagan_arrays::kAttention,
          "attention beta_{j,i} of query location j over key location i (raster order; pooled keys "
          "when sagan.pool_keys) [1, HW, HWk]",
          std::move(att));
    AttentionMap m;  // rows: the query locations' "tokens"; columns: the same, unless pooled
    m.array = sagan_arrays::kAttention;
    m.stack = "sagan";
    m.sublayer = "attn";
    m.queries = {TokenSide::Source, 0, N};
    m.keys = {keys == N ? TokenSide::Source : TokenSide::Positions, 0, keys};
    t.describe_attention(std::move(m));
    Tensor gamma({1});
    gamma.data[0] = w.gamma;
    t.add("sagan.gamma", "residual scale gamma [1]", std::move(gamma));
    t.add("sagan.output", "y = x + gamma o [C, H, W]", channel_major(r.output, S, S));
  }
  t.add("output", "block output y per location [HW, C]", result.output);
  return result;
}

}  // namespace atlas
