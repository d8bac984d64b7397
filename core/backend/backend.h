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

#include "core/tensor/tensor.h"

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
  RmsNorm,  // Llama-family blocks
  Mul,
  RepeatHeads,
  // Variant attention computed by core/ on the host unless the backend has a kernel for it
  // (supports() says which); see Backend::note_host_compute.
  LshAttention,  // Reformer LSH attention (core/variants/reformer/lsh_attention.cpp)
  HostModel,     // whole models without backend ops: seq2seq RNN, NTM, SAGAN (seed 004)
  Count          // not an op: how many there are (core/backend/op_registry.cpp has each)
};
// Lookups into the op registry (core/backend/op_registry.h).
const char* op_name(Op op);
// One line saying what a host computation of `op` costs a device backend (for fallbacks()).
std::string host_fallback_line(Op op);

enum class Activation { ReLU, GeluErf, GeluTanh, Silu };  // silu(x) = x sigmoid(x)

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
  // With causal: also j > i + causal_offset - window (a sliding window of `window` keys
  // ending at the query's own position, Mistral); 0 = no window.
  int64_t window = 0;

  bool is_allowed(int64_t i, int64_t j, int64_t lk) const {
    if (causal && j > i + causal_offset) return false;
    if (causal && window > 0 && j <= i + causal_offset - window) return false;
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

struct ModuleOp;  // core/backend/module_op.h

class Backend {
 public:
  Backend();
  virtual ~Backend() = default;
  // Unique per backend instance for the process lifetime (keys caches of uploaded weights;
  // an address could be reused by a later backend).
  uint64_t instance_id() const { return instance_id_; }
  // Expires when this backend is destroyed, so caches of its tensors (the model's uploaded
  // weights, core/model/model.cpp) can let go of them.
  std::weak_ptr<const void> lifetime() const { return alive_; }
  virtual std::string name() const = 0;
  virtual bool supports(Op op) const = 0;

  virtual DTensor upload(const Tensor& host) = 0;
  // A model weight: `host` outlives the result and does not change while it is used. The CPU
  // backend reads it in place (a model's weights are not held twice), quantized ones included;
  // device backends copy. The default converts a weight held in its file's encoding
  // (Tensor::packed) to float32 first and says so in fallbacks().
  virtual DTensor upload_weight(const Tensor& host);
  virtual Tensor download(const DTensor& t) = 0;
  // Several downloads that a recording backend serves with one submission.
  virtual std::vector<Tensor> download_all(const std::vector<DTensor>& ts) {
    std::vector<Tensor> out;
    out.reserve(ts.size());
    for (const DTensor& t : ts) out.push_back(download(t));
    return out;
  }
  // Downloads of tensors whose caller lets go of them (`ts` holds the last handles): a backend
  // whose outputs live in host memory may hand a buffer over instead of copying it (the CPU
  // backend does for its largest outputs: attention maps, logits). Otherwise download_all.
  virtual std::vector<Tensor> take_all(std::vector<DTensor> ts) { return download_all(ts); }
  // Start recorded work without waiting (no-op for eager backends).
  virtual void flush() {}
  // Queue submissions so far (0 for eager backends); tested to catch per-op waits.
  virtual uint64_t submission_count() const { return 0; }
  // Ops this backend ran on the CPU instead, one line each (shown by `atlas info`).
  virtual std::vector<std::string> fallbacks() const { return fallbacks_; }
  // Records a CPU fallback: logged to stderr and listed by fallbacks(), once per line.
  virtual void note_fallback(const std::string& line);
  // Called by model code right before it computes `op` on the host with this backend's
  // tensors (download, compute, upload). A backend that supports(op) runs on the host anyway
  // (CPU) and ignores it; any other backend reports it as a fallback, once per op kind.
  void note_host_compute(Op op) {
    if (!supports(op)) note_fallback(host_fallback_line(op));
  }

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
  // x [M, d], w [d]: x / sqrt(mean_k x_k^2 + eps) * w (RMSNorm; Zhang & Sennrich 2019, Llama).
  // The defaults of these three run the host reference (core/backend/backend.cpp).
  virtual DTensor rms_norm(const DTensor& x, const DTensor& w, float eps);
  // a, b of equal shape -> a * b elementwise (the gated feed-forward's product)
  virtual DTensor mul(const DTensor& a, const DTensor& b);
  // Grouped-query attention: x [L, kv_heads * d_head] -> [L, kv_heads * groups * d_head] whose
  // head h is x's head h / groups (Hugging Face's repeat_kv).
  virtual DTensor repeat_heads(const DTensor& x, int64_t groups, int64_t d_head);
  // table [V, d], ids [L] -> [L, d] * scale
  virtual DTensor embedding(const DTensor& table, const std::vector<int32_t>& ids,
                            float scale) = 0;
  // q [Lq, H*dh], k [Lk, H*dh], v [Lk, H*dv] -> softmax(scale q k^T + mask) v per head
  virtual AttentionResult attention(const DTensor& q, const DTensor& k, const DTensor& v,
                                    const AttentionArgs& args) = 0;
  // Rows [begin, begin + count) of x [M, d] -> [count, d]. The default copies through the host.
  virtual DTensor slice_rows(const DTensor& x, int64_t begin, int64_t count);
  // [a; b] for a [Ma, d] (Ma may be 0) and b [Mb, d]. The default copies through the host.
  virtual DTensor concat_rows(const DTensor& a, const DTensor& b);

  // A variant module's op (core/backend/module_op.h; call it through run_op). Supported: the
  // CPU backend (the host reference is its computation) and a device backend with a kernel for
  // the op's name. The default downloads the inputs, runs the op's host reference and uploads
  // the outputs, reported by module_fallback_line unless supports_module_op(op).
  virtual bool supports_module_op(const ModuleOp& op) const;
  virtual std::vector<DTensor> run_module_op(const ModuleOp& op, const std::vector<DTensor>& inputs,
                                             const void* args);

 private:
  uint64_t instance_id_;
  std::shared_ptr<const int> alive_ = std::make_shared<const int>(0);
  std::vector<std::string> fallbacks_;  // the default note_fallback's record
};

std::unique_ptr<Backend> make_cpu_backend();

// Host references of rms_norm and repeat_heads (the defaults above; the GPU tests' second
// oracle).
Tensor rms_norm_reference(const Tensor& x, const Tensor& w, float eps);
Tensor repeat_heads_reference(const Tensor& x, int64_t groups, int64_t d_head);

// Threads of the CPU backend's own work split (RunOptions::threads; 0 = OpenMP's default, one
// per core). Eigen's internal GEMM threading is switched off when a CPU backend is made: its
// spin barriers stall whenever the other core is busy (vanilla-base at 64 tokens: 300 ms with
// it, 105 ms without), so the backend splits large products itself, one join per op.
void set_cpu_threads(int threads);

// How the CPU backend multiplies by block-quantized weights (Q8_0, Q4_K, ...; float16, bfloat16
// and float32 weights always take float32 activations):
//   Int8Activations  the activations quantized to int8 per 32 values, integer dot products
//                    (llama.cpp's own arithmetic, ~3-4x faster; maps and logits differ from the
//                    dequantized model's by that rounding: docs/quantized-models.md);
//   Exact            float32 activations times the weights dequantized tile by tile (the
//                    dequantized model itself, to float rounding, at the float product's speed).
// Process-wide, like the thread count; the default is Int8Activations.
enum class QuantizedProducts { Int8Activations, Exact };
void set_quantized_products(QuantizedProducts products);
QuantizedProducts quantized_products();
int cpu_threads();

}  // namespace atlas
