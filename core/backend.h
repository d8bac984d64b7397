#pragma once
// The compute boundary between the model and the hardware (DESIGN.md, "Backend boundary").
// The model is written once against this interface; the Eigen CPU backend (cpu_backend.cpp)
// is the reference and the fallback, the Vulkan backend (gpu/) records the same calls into a
// command buffer. Ops return new device tensors; a backend may execute eagerly (CPU) or record
// and run at the next download() / flush() (Vulkan). download() always returns finished data.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tensor.h"

namespace atlas {

enum class Op {
  Linear,
  Add,
  Scale,
  LayerNorm,
  ScaleNorm,
  Activation,
  Embedding,
  Attention,
  RowNormalize,
};
const char* op_name(Op op);

enum class Activation { ReLU, GeluErf, GeluTanh };

// Backend-specific storage behind a device tensor.
struct DeviceStorage {
  virtual ~DeviceStorage() = default;
};

struct DTensor {
  Shape shape;
  std::shared_ptr<DeviceStorage> storage;
  int64_t numel() const { return numel_of(shape); }
  explicit operator bool() const { return storage != nullptr; }
};

// Which keys each query may see. Allowed(i, j) is the conjunction of every set constraint.
struct AttentionMask {
  bool causal = false;
  // With causal: query i sees key j iff j <= i + causal_offset (offset = keys before the
  // first query position, e.g. memory length).
  int64_t causal_offset = 0;
  std::vector<uint8_t> key_valid;  // [Lk], 1 = real token, 0 = padding; empty = all valid
  std::vector<uint8_t> allowed;    // [Lq, Lk], 1 = allowed; empty = no pattern constraint

  bool is_allowed(int64_t i, int64_t j, int64_t lk) const {
    if (causal && j > i + causal_offset) return false;
    if (!key_valid.empty() && !key_valid[static_cast<size_t>(j)]) return false;
    if (!allowed.empty() && !allowed[static_cast<size_t>(i * lk + j)]) return false;
    return true;
  }
};

struct AttentionArgs {
  int heads = 1;
  float scale = 1.0f;  // multiplies q . k before the softmax
  AttentionMask mask;
  bool want_probs = false;   // fill AttentionResult::probs [heads, Lq, Lk]
  bool want_scores = false;  // fill AttentionResult::scores [heads, Lq, Lk], masked = -inf
};

struct AttentionResult {
  DTensor out;     // [Lq, heads * d_head]
  DTensor probs;   // [heads, Lq, Lk] when asked
  DTensor scores;  // [heads, Lq, Lk] when asked
};

class Backend {
 public:
  Backend();
  virtual ~Backend() = default;
  // Unique per backend instance for the process lifetime (keys caches of uploaded weights;
  // an address could be reused by a later backend).
  uint64_t instance_id() const { return instance_id_; }
  virtual std::string name() const = 0;
  virtual bool supports(Op op) const = 0;

  virtual DTensor upload(const Tensor& host) = 0;
  virtual Tensor download(const DTensor& t) = 0;
  // Several downloads that a recording backend serves with one submission.
  virtual std::vector<Tensor> download_all(const std::vector<DTensor>& ts) {
    std::vector<Tensor> out;
    out.reserve(ts.size());
    for (const DTensor& t : ts) out.push_back(download(t));
    return out;
  }
  // Start recorded work without waiting (no-op for eager backends).
  virtual void flush() {}
  // Queue submissions so far (0 for eager backends); tested to catch per-op waits.
  virtual uint64_t submission_count() const { return 0; }
  // Ops this backend ran on the CPU instead, one line each (shown by `atlas info`).
  virtual std::vector<std::string> fallbacks() const { return {}; }

  // x [M, in], w [out, in], b [out] or empty -> [M, out]   (y = x w^T + b)
  virtual DTensor linear(const DTensor& x, const DTensor& w, const DTensor& b) = 0;
  // a, b of equal shape -> a + b
  virtual DTensor add(const DTensor& a, const DTensor& b) = 0;
  virtual DTensor scale(const DTensor& x, float s) = 0;
  // x [M, d], gamma [d], beta [d]
  virtual DTensor layer_norm(const DTensor& x, const DTensor& gamma, const DTensor& beta,
                             float eps) = 0;
  // x [M, d], g [1]: g * x / max(|x|, eps)
  virtual DTensor scale_norm(const DTensor& x, const DTensor& g, float eps) = 0;
  // each row scaled to unit L2 norm (FixNorm's embedding rows)
  virtual DTensor row_normalize(const DTensor& x, float eps) = 0;
  virtual DTensor activation(const DTensor& x, Activation kind) = 0;
  // table [V, d], ids [L] -> [L, d] * scale
  virtual DTensor embedding(const DTensor& table, const std::vector<int32_t>& ids,
                            float scale) = 0;
  // q [Lq, H*dh], k [Lk, H*dh], v [Lk, H*dv] -> softmax(scale q k^T + mask) v per head
  virtual AttentionResult attention(const DTensor& q, const DTensor& k, const DTensor& v,
                                    const AttentionArgs& args) = 0;

 private:
  uint64_t instance_id_;
};

std::unique_ptr<Backend> make_cpu_backend();

}  // namespace atlas
