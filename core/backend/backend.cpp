#include "core/backend/backend.h"

#include <algorithm>
#include <cmath>
#include <atomic>
#include <cstdio>

#include "core/formats/packed_weights.h"
#include "core/tensor/error.h"

namespace atlas {

Backend::Backend() {
  static std::atomic<uint64_t> next{1};
  instance_id_ = next++;
}

void Backend::note_fallback(const std::string& line) {
  if (std::find(fallbacks_.begin(), fallbacks_.end(), line) != fallbacks_.end()) return;
  fallbacks_.push_back(line);
  std::fprintf(stderr, "atlas: %s: %s\n", name().c_str(), line.c_str());
}

DTensor Backend::upload_weight(const Tensor& host) {
  if (!host.packed) return upload(host);
  note_fallback(std::string("weights held as ") + held_type_name(host) +
                " are converted to float32 on upload (this backend has no product for them; "
                "the CPU backend keeps them as they are)");
  return upload(to_float(host));
}

Tensor rms_norm_reference(const Tensor& x, const Tensor& w, float eps) {
  const int64_t d = x.shape.empty() ? 0 : x.shape.back();
  if (d == 0 || w.numel() != d)
    throw AtlasError("rms_norm: weight " + shape_str(w.shape) + " for input " + shape_str(x.shape));
  Tensor y(x.shape);
  for (int64_t r = 0; r < x.numel() / d; ++r) {
    const float* in = x.data.data() + r * d;
    float sum = 0.0f;
    for (int64_t k = 0; k < d; ++k) sum += in[k] * in[k];
    const float inv = 1.0f / std::sqrt(sum / float(d) + eps);
    for (int64_t k = 0; k < d; ++k) y.data[size_t(r * d + k)] = in[k] * inv * w.data[size_t(k)];
  }
  return y;
}

Tensor repeat_heads_reference(const Tensor& x, int64_t groups, int64_t d_head) {
  if (x.shape.size() != 2 || groups < 1 || d_head < 1 || x.shape[1] % d_head != 0)
    throw AtlasError("repeat_heads: " + shape_str(x.shape) + " is not rows of heads of " +
                     std::to_string(d_head) + " (groups " + std::to_string(groups) + ")");
  const int64_t L = x.shape[0], kv = x.shape[1] / d_head;
  Tensor y({L, kv * groups * d_head});
  for (int64_t l = 0; l < L; ++l)
    for (int64_t h = 0; h < kv * groups; ++h)
      std::copy_n(x.data.begin() + l * kv * d_head + (h / groups) * d_head, d_head,
                  y.data.begin() + (l * kv * groups + h) * d_head);
  return y;
}

DTensor Backend::rms_norm(const DTensor& x, const DTensor& w, float eps) {
  note_host_compute(Op::RmsNorm);
  const std::vector<Tensor> in = download_all({x, w});
  return upload(rms_norm_reference(in[0], in[1], eps));
}

DTensor Backend::mul(const DTensor& a, const DTensor& b) {
  if (a.shape != b.shape) throw AtlasError("mul: " + shape_str(a.shape) + " * " + shape_str(b.shape));
  note_host_compute(Op::Mul);
  std::vector<Tensor> in = download_all({a, b});
  for (size_t i = 0; i < in[0].data.size(); ++i) in[0].data[i] *= in[1].data[i];
  return upload(in[0]);
}

DTensor Backend::repeat_heads(const DTensor& x, int64_t groups, int64_t d_head) {
  note_host_compute(Op::RepeatHeads);
  return upload(repeat_heads_reference(download(x), groups, d_head));
}

DTensor Backend::slice_rows(const DTensor& x, int64_t begin, int64_t count) {
  if (x.shape.size() != 2 || begin < 0 || count < 0 || begin + count > x.shape[0])
    throw AtlasError("slice_rows: rows [" + std::to_string(begin) + ", " + std::to_string(begin + count) +
                     ") are not inside " + shape_str(x.shape));
  const Tensor host = download(x);
  Tensor out({count, x.shape[1]});
  std::copy(host.data.begin() + begin * x.shape[1], host.data.begin() + (begin + count) * x.shape[1],
            out.data.begin());
  return upload(out);
}

DTensor Backend::concat_rows(const DTensor& a, const DTensor& b) {
  if (a.shape.size() != 2 || b.shape.size() != 2 || a.shape[1] != b.shape[1])
    throw AtlasError("concat_rows: " + shape_str(a.shape) + " and " + shape_str(b.shape) +
                     " are not matrices with the same number of columns");
  const std::vector<Tensor> host = download_all({a, b});
  Tensor out({a.shape[0] + b.shape[0], b.shape[1]});
  std::copy(host[0].data.begin(), host[0].data.end(), out.data.begin());
  std::copy(host[1].data.begin(), host[1].data.end(), out.data.begin() + a.numel());
  return upload(out);
}

}  // namespace atlas
