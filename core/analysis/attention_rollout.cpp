#include "core/analysis/attention_rollout.h"

#include "core/tensor/error.h"

namespace atlas {

Tensor residual_mix(const float* a, int64_t n) {
  Tensor t({n, n});
  auto m = t.mat();
  m = 0.5f * Eigen::Map<const Mat>(a, n, n);
  m.diagonal().array() += 0.5f;
  for (int64_t i = 0; i < n; ++i) {  // renormalise (masked rows may not sum to 1)
    const float s = m.row(i).sum();
    if (s > 0) m.row(i) /= s;
  }
  return t;
}

std::vector<Tensor> residual_attention(const Trace& trace, const std::string& stack, int64_t last) {
  const std::string kind = stack == "decoder" ? ".self_attn" : ".attn";
  auto layer_name = [&](int64_t i) { return stack + ".layer" + std::to_string(i) + kind; };
  int64_t layers = 0;
  while (trace.find(layer_name(layers))) ++layers;
  if (layers == 0)
    throw AtlasError("attention rollout needs the traced attention of " + layer_name(0) +
                     " (run with attention tracing)");
  if (last < 0) last = layers - 1;
  if (last >= layers)
    throw AtlasError("attention rollout: layer " + std::to_string(last) + " asked for, but " +
                     stack + " has " + std::to_string(layers) + " traced layers");
  std::vector<Tensor> out;
  for (int64_t l = 0; l <= last; ++l) {
    const Tensor& a = trace.find(layer_name(l))->tensor;  // [heads, L, L]
    if (a.shape.size() != 3 || a.shape[1] != a.shape[2])
      throw AtlasError("attention rollout: " + layer_name(l) + " is not [heads, L, L]");
    const int64_t heads = a.shape[0], L = a.shape[1];
    if (!out.empty() && out.front().shape[0] != L) throw AtlasError("attention rollout: layers disagree on the length");
    Mat mean = Mat::Zero(L, L);
    for (int64_t h = 0; h < heads; ++h) mean += Eigen::Map<const Mat>(a.data.data() + h * L * L, L, L) / float(heads);
    out.push_back(residual_mix(mean.data(), L));
  }
  return out;
}

Tensor attention_rollout(const Trace& trace, const std::string& stack, int64_t last) {
  Mat r;
  for (const Tensor& a : residual_attention(trace, stack, last)) {
    if (r.size() == 0) r = Mat::Identity(a.shape[0], a.shape[0]);
    r = a.mat() * r;
  }
  Tensor out({r.rows(), r.cols()});
  out.mat() = r;
  return out;
}

}  // namespace atlas
