#include "core/input/patch_input.h"

#include <algorithm>
#include <cmath>

#include "core/tensor/error.h"

namespace atlas {
namespace {

// One output sample's source range and normalised weights (PIL's precompute_coeffs).
struct Taps {
  int64_t first = 0;
  std::vector<double> weights;
};

std::vector<Taps> bilinear_taps(int64_t in, int64_t out) {
  const double scale = double(in) / double(out);
  const double filter_scale = std::max(scale, 1.0);  // widen the triangle when shrinking
  const double support = 1.0 * filter_scale;         // BILINEAR's support is 1
  std::vector<Taps> taps(static_cast<size_t>(out));
  for (int64_t i = 0; i < out; ++i) {
    const double center = (double(i) + 0.5) * scale;
    const int64_t lo = std::max<int64_t>(0, int64_t(center - support + 0.5));
    const int64_t hi = std::min<int64_t>(in, int64_t(center + support + 0.5));
    Taps& t = taps[size_t(i)];
    t.first = lo;
    double total = 0;
    for (int64_t x = lo; x < hi; ++x) {
      const double w = std::max(0.0, 1.0 - std::abs((double(x) - center + 0.5) / filter_scale));
      t.weights.push_back(w);
      total += w;
    }
    if (total > 0)
      for (double& w : t.weights) w /= total;
  }
  return taps;
}

uint8_t round_to_byte(double v) { return uint8_t(std::clamp(std::floor(v + 0.5), 0.0, 255.0)); }

}  // namespace

bool is_patch_model(const ModelConfig& c) { return c.embeddings.patches.enabled(); }

RgbImage resize_bilinear(const RgbImage& image, int64_t height, int64_t width) {
  if (image.height < 1 || image.width < 1 ||
      int64_t(image.rgb.size()) != image.height * image.width * 3)
    throw AtlasError("image is empty or inconsistent (" + std::to_string(image.width) + "x" +
                     std::to_string(image.height) + ")");
  if (height < 1 || width < 1) throw AtlasError("resize target must be at least 1x1");
  // Horizontal pass first, then vertical, each rounded to 8 bits (PIL's ImagingResample).
  RgbImage across{image.height, width, std::vector<uint8_t>(size_t(image.height * width * 3))};
  const auto h_taps = bilinear_taps(image.width, width);
  for (int64_t y = 0; y < image.height; ++y)
    for (int64_t x = 0; x < width; ++x)
      for (int64_t ch = 0; ch < 3; ++ch) {
        const Taps& t = h_taps[size_t(x)];
        double v = 0;
        for (size_t k = 0; k < t.weights.size(); ++k)
          v += t.weights[k] * image.rgb[size_t(((y * image.width) + t.first + int64_t(k)) * 3 + ch)];
        across.rgb[size_t((y * width + x) * 3 + ch)] = round_to_byte(v);
      }
  RgbImage out{height, width, std::vector<uint8_t>(size_t(height * width * 3))};
  const auto v_taps = bilinear_taps(image.height, height);
  for (int64_t y = 0; y < height; ++y)
    for (int64_t x = 0; x < width; ++x)
      for (int64_t ch = 0; ch < 3; ++ch) {
        const Taps& t = v_taps[size_t(y)];
        double v = 0;
        for (size_t k = 0; k < t.weights.size(); ++k)
          v += t.weights[k] * across.rgb[size_t(((t.first + int64_t(k)) * width + x) * 3 + ch)];
        out.rgb[size_t((y * width + x) * 3 + ch)] = round_to_byte(v);
      }
  return out;
}

PatchInput patch_input(const ModelConfig& c, const RgbImage& image) {
  if (!is_patch_model(c))
    throw AtlasError("model " + c.name + " does not read images as patches (embeddings.patches)");
  const PatchOptions& p = c.embeddings.patches;
  if (p.channels != 3 && p.channels != 1)
    throw AtlasError("image input needs 1 or 3 channels, the model has " + std::to_string(p.channels));
  PatchInput in;
  in.resized = resize_bilinear(image, p.image_size, p.image_size);
  in.grid = p.per_side();
  if (p.cls) in.tokens.push_back({0, "[CLS]", 0, {}});
  auto channel_value = [&](int64_t y, int64_t x, int64_t ch) {
    const uint8_t* px = &in.resized.rgb[size_t((y * p.image_size + x) * 3)];
    const double v = p.channels == 3 ? px[ch] : 0.299 * px[0] + 0.587 * px[1] + 0.114 * px[2];
    return float((v * p.rescale - p.mean[size_t(ch)]) / p.std[size_t(ch)]);
  };
  for (int64_t r = 0; r < in.grid; ++r)
    for (int64_t col = 0; col < in.grid; ++col) {
      TokenInfo t{0, std::to_string(r) + "," + std::to_string(col), 0, {}};
      t.patch.reserve(size_t(p.features()));
      for (int64_t ch = 0; ch < p.channels; ++ch)
        for (int64_t dy = 0; dy < p.size; ++dy)
          for (int64_t dx = 0; dx < p.size; ++dx)
            t.patch.push_back(channel_value(r * p.size + dy, col * p.size + dx, ch));
      in.tokens.push_back(std::move(t));
    }
  return in;
}

PatchMatrices patch_matrices(const ModelConfig& c, const ParamStore& params,
                             const std::vector<TokenInfo>& tokens) {
  const PatchOptions& p = c.embeddings.patches;
  const int64_t expected = p.patch_count() + (p.cls ? 1 : 0), F = p.features();
  if (int64_t(tokens.size()) != expected)
    throw AtlasError("an image model takes exactly " + std::to_string(expected) +
                     " tokens (its patches" + (p.cls ? std::string(" and [CLS]") : "") + "), got " +
                     std::to_string(tokens.size()) + "; give it an image, not text");
  PatchMatrices m;
  m.pixels = Tensor({expected, F});
  for (int64_t i = 0; i < expected; ++i) {
    const TokenInfo& t = tokens[size_t(i)];
    if (p.cls && i == 0) {
      if (!t.patch.empty())
        throw AtlasError("token 0 of an image model is its [CLS] token and carries no pixels");
      continue;
    }
    if (int64_t(t.patch.size()) != F)
      throw AtlasError("token " + std::to_string(i) + " (\"" + t.label + "\") has " +
                       std::to_string(t.patch.size()) + " pixel values, the model's patches have " +
                       std::to_string(F));
    std::copy(t.patch.begin(), t.patch.end(), m.pixels.data.begin() + i * F);
  }
  if (p.cls) {
    m.cls_fix = Tensor({expected, c.d_model});
    const auto& cls = params.at("embed.cls").data;
    const auto& bias = params.at("embed.patch.bias").data;
    for (int64_t k = 0; k < c.d_model; ++k) m.cls_fix.data[size_t(k)] = cls[size_t(k)] - bias[size_t(k)];
  }
  return m;
}

}  // namespace atlas
