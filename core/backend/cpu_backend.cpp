// The CPU backend: the reference every other backend is tested against, and the fallback. Ops
// run eagerly on Eigen, with the packed matrix product of cpu_gemm.h for linear layers and
// attention scores; work is split over OpenMP threads by this backend.
#include <omp.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "core/backend/attention_rows.h"
#include "core/backend/backend.h"
#include "core/backend/cpu_gemm.h"
#include "core/backend/module_op.h"
#include "core/backend/quant_matmul.h"
#include "core/formats/ggml_types.h"
#include "core/formats/packed_weights.h"
#include "core/tensor/error.h"

namespace atlas {

namespace {

// An op's output is a host Tensor (aligned, tensor.h), so a download the caller lets go of hands
// the buffer over instead of copying it (take_all): at 1024 tokens GPT-2's maps are 600 MB.
struct CpuStorage : DeviceStorage {
  Tensor values;
  const float* borrowed = nullptr;  // a model weight read in place (upload_weight)
  // A model weight held in its file's encoding (quantized, 16-bit): only linear and embedding
  // read it, block by block; it has no float32 values to point at.
  std::shared_ptr<const PackedMatrix> packed;
};

const PackedMatrix* packed_of(const DTensor& t) {
  return static_cast<const CpuStorage*>(t.storage.get())->packed.get();
}

// Ops only write the tensors they make, so a borrowed weight is never written through this.
float* ptr(const DTensor& t) {
  auto* s = static_cast<CpuStorage*>(t.storage.get());
  if (s->packed)
    throw AtlasError("cpu backend: an op other than linear or embedding was given a weight held as " +
                     std::string(held_type_name(*s->packed)) + " " + shape_str(t.shape) +
                     "; it reads float32 only");
  return s->borrowed ? const_cast<float*>(s->borrowed) : s->values.data.data();
}

// An output the op writes in full: no zero-fill first.
DTensor make_uninit(Shape shape) {
  auto s = std::make_shared<CpuStorage>();
  s->values = Tensor::uninitialized(shape);
  return DTensor{std::move(shape), std::move(s)};
}

DTensor make(Shape shape) {  // zero-filled
  auto s = std::make_shared<CpuStorage>();
  s->values = Tensor(shape);
  return DTensor{std::move(shape), std::move(s)};
}

// Rows x cols view of a tensor whose last dimension is the row length.
MatMap rows_of(const DTensor& t, int64_t cols) {
  return MatMap(ptr(t), cols == 0 ? 0 : t.numel() / cols, cols);
}

int64_t last_dim(const DTensor& t) { return t.shape.empty() ? 1 : t.shape.back(); }

void require(bool ok, const char* op, const std::string& what) {
  if (!ok) throw AtlasError(std::string("cpu backend: ") + op + ": " + what);
}


std::atomic<int> g_cpu_threads{0};  // 0: OpenMP's default
// set_quantized_products; ATLAS_QUANTIZED_PRODUCTS=exact starts a process with exact products.
bool int8_by_default() {
  const char* v = std::getenv("ATLAS_QUANTIZED_PRODUCTS");
  return !(v && std::string(v) == "exact");
}
std::atomic<bool> g_int8_activations{int8_by_default()};

constexpr int64_t kPackedMinRows = 24;  // two of the packed kernel's row tiles
// Element-wise ops and row norms split over the threads above this many elements (each element
// or row is computed the same way whichever thread takes it).
constexpr int64_t kParallelElements = int64_t{1} << 18;

// GPT-2's GELU, 0.5 v (1 + tanh(sqrt(2 / pi) (v + 0.044715 v^3))), with Eigen's vectorised tanh
// (the scalar std::tanh was 4 % of a 1024-token forward). Computed in place in y (aligned as
// Eigen packets) in chunks that start at multiples of 16, so which elements take the scalar tail
// depends only on n, not on the thread split or on where x lies.
void gelu_tanh(const float* x, float* y, int64_t n) {
  constexpr int64_t kChunk = 1 << 16;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for num_threads(cpu_threads()) schedule(static) if (chunks > 1)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t i0 = c * kChunk, len = std::min(kChunk, n - i0);
    std::copy(x + i0, x + i0 + len, y + i0);
    Eigen::Map<Eigen::ArrayXf, Eigen::AlignedMax> v(y + i0, len);
    v = 0.5f * v * (1.0f + (0.7978845608028654f * (v + 0.044715f * v.cube())).tanh());
  }
}

class CpuBackend : public Backend {
 public:
  CpuBackend() { Eigen::setNbThreads(1); }  // products split by this backend, not by Eigen

  std::string name() const override { return "cpu (Eigen)"; }
  bool supports(Op) const override { return true; }
  bool supports_module_op(const ModuleOp&) const override { return true; }
  // A module op's host reference is this backend's computation: its outputs become the result
  // tensors as they are (traced maps are large; a copy each cost XL's traced terms ~1.5x).
  std::vector<DTensor> run_module_op(const ModuleOp& op, const std::vector<DTensor>& inputs,
                                     const void* args) override {
    std::vector<Tensor> host = op.host(download_all(inputs), args);
    std::vector<DTensor> out;
    out.reserve(host.size());
    for (Tensor& t : host) {
      auto s = std::make_shared<CpuStorage>();
      Shape shape = t.shape;
      s->values = std::move(t);
      out.push_back(DTensor{std::move(shape), std::move(s)});
    }
    return out;
  }

  DTensor upload(const Tensor& host) override {
    DTensor t = make_uninit(host.shape);
    std::copy(host.data.begin(), host.data.end(), ptr(t));
    return t;
  }

  DTensor upload_weight(const Tensor& host) override {
    auto s = std::make_shared<CpuStorage>();
    if (host.packed && host.packed->type == ggml_type::F32 &&
        reinterpret_cast<uintptr_t>(host.packed->data) % alignof(float) == 0)
      s->borrowed = reinterpret_cast<const float*>(host.packed->data);  // float32 in the file
    else if (host.packed)
      s->packed = host.packed;
    else
      s->borrowed = host.data.data();
    return DTensor{host.shape, std::move(s)};
  }

  Tensor download(const DTensor& t) override {
    if (const PackedMatrix* m = packed_of(t)) {  // asked for explicitly: the caller holds it
      Tensor host = Tensor::uninitialized(t.shape);
      dequantize_rows(*m, 0, m->rows, host.data.data());
      return host;
    }
    Tensor host = Tensor::uninitialized(t.shape);
    std::copy(ptr(t), ptr(t) + t.numel(), host.data.begin());
    return host;
  }

  std::vector<Tensor> take_all(std::vector<DTensor> ts) override {
    std::vector<Tensor> out;
    out.reserve(ts.size());
    for (DTensor& t : ts) {
      auto* s = t.storage ? static_cast<CpuStorage*>(t.storage.get()) : nullptr;
      // Only the last handle may give the buffer away: another holder would see it emptied.
      if (s && !s->borrowed && !s->packed && t.storage.use_count() == 1) {
        out.push_back(std::move(s->values));
        out.back().shape = t.shape;
      } else {
        out.push_back(t ? download(t) : Tensor{});
      }
      t = DTensor{};
    }
    return out;
  }

  DTensor linear(const DTensor& x, const DTensor& w, const DTensor& b) override {
    require(w.shape.size() == 2, "linear", "weight must be 2-D, got " + shape_str(w.shape));
    const int64_t in = w.shape[1], out = w.shape[0];
    require(last_dim(x) == in, "linear",
            "input " + shape_str(x.shape) + " does not match weight " + shape_str(w.shape));
    const int64_t m = x.numel() / in;
    DTensor y = make_uninit({m, out});  // every column block is assigned below
    MatMap Y = rows_of(y, out);
    if (const PackedMatrix* pw = packed_of(w)) {
      packed_linear(*pw, x, m, y);
      if (b) add_bias(b, out, Y);
      return y;
    }
    MatMap X = rows_of(x, in), Wt = rows_of(w, in);
    // Threads take whole blocks of output columns (one join per op) rather than letting
    // Eigen's GEMM split itself: its inner spin-barriers stall badly whenever another process
    // holds a core, which made a 128-token forward 10x slower on a busy 2-core machine.
    // Output columns [c0, c0 + n): the packed kernel (cpu_gemm.h) from a few row tiles up; for
    // a keystroke's one or two new rows, packing the weight would cost more than Eigen's
    // matrix-vector product reading it once.
    auto columns = [&](int64_t c0, int64_t n) {
      if (m >= kPackedMinRows)
        cpu_gemm::multiply(m, n, in, {ptr(x), in, 1}, {ptr(w) + c0 * in, 1, in}, ptr(y) + c0, out);
      else
        Y.middleCols(c0, n).noalias() = X * Wt.middleRows(c0, n).transpose();
    };
    const int threads = cpu_threads();
    if (threads > 1 && m * in * out >= (int64_t{1} << 22)) {
      const int64_t block = (out + threads - 1) / threads;
#pragma omp parallel for num_threads(threads) schedule(static)
      for (int t = 0; t < threads; ++t) {
        const int64_t c0 = t * block, n = std::min(block, out - c0);
        if (n > 0) columns(c0, n);
      }
    } else {
      columns(0, out);
    }
    if (b) add_bias(b, out, Y);
    return y;
  }

  static void add_bias(const DTensor& b, int64_t out, MatMap& Y) {
    require(b.numel() == out, "linear", "bias " + shape_str(b.shape) + " for " +
                                             std::to_string(out) + " outputs");
    Y.rowwise() += rows_of(b, out).row(0);
  }

  // y = x W^T with W in its file's encoding: the activations prepared once (quantized per block
  // where the type's product reads int8), then the threads take blocks of output columns.
  static void packed_linear(const PackedMatrix& w, const DTensor& x, int64_t m, DTensor& y) {
    const int64_t in = w.cols, out = w.rows;
    require(quant_matmul::supports(w.type), "linear",
            std::string("no product for weights held as ") + held_type_name(w));
    if (!g_int8_activations.load() && !ggml_type::is_float(w.type)) return exact_linear(w, x, m, y);
    const quant_matmul::PreparedInput prepared(w.type, ptr(x), m, in, in);
    const int threads = cpu_threads();
    if (threads > 1 && m * in * out >= (int64_t{1} << 20)) {
      // Blocks of whole 64-column panels (the kernels unpack 32 columns at a time), about four
      // per thread, dealt out dynamically so the threads finish together.
      const int64_t chunk = std::max<int64_t>(64, ((out + 4 * threads - 1) / (4 * threads) + 63) / 64 * 64);
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
      for (int64_t c0 = 0; c0 < out; c0 += chunk)
        quant_matmul::multiply(w, prepared, c0, std::min(chunk, out - c0), ptr(y) + c0, out);
    } else {
      quant_matmul::multiply(w, prepared, 0, out, ptr(y), out);
    }
  }

  // y = x W^T with float32 activations: tiles of W's rows converted into a per-thread buffer
  // and multiplied as float32 (what the model computes with its weights dequantized, to float
  // rounding), at the float product's speed. Each tile is converted once per product.
  static void exact_linear(const PackedMatrix& w, const DTensor& x, int64_t m, DTensor& y) {
    const int64_t in = w.cols, out = w.rows;
    constexpr int64_t kTileRows = 64;
    const int64_t tiles = (out + kTileRows - 1) / kTileRows;
    const float* px = ptr(x);
    float* py = ptr(y);
    const int threads = m * in * out >= (int64_t{1} << 20) ? cpu_threads() : 1;
#pragma omp parallel num_threads(threads) if (threads > 1)
    {
      FloatBuffer tile(static_cast<size_t>(kTileRows * in));
#pragma omp for schedule(dynamic, 1)
      for (int64_t t = 0; t < tiles; ++t) {
        const int64_t c0 = t * kTileRows, n = std::min(kTileRows, out - c0);
        dequantize_rows(w, c0, n, tile.data());
        if (m >= kPackedMinRows) {
          cpu_gemm::multiply(m, n, in, {px, in, 1}, {tile.data(), 1, in}, py + c0, out);
        } else {
          MatMap Y(py, m, out);
          ConstMatMap X(px, m, in), T(tile.data(), n, in);
          Y.middleCols(c0, n).noalias() = X * T.transpose();
        }
      }
    }
  }

  DTensor add(const DTensor& a, const DTensor& b) override {
    require(a.shape == b.shape, "add", shape_str(a.shape) + " + " + shape_str(b.shape));
    DTensor c = make_uninit(a.shape);
    const float *pa = ptr(a), *pb = ptr(b);
    float* pc = ptr(c);
    const int64_t n = a.numel();
#pragma omp parallel for num_threads(cpu_threads()) schedule(static) if (n > kParallelElements)
    for (int64_t i = 0; i < n; ++i) pc[i] = pa[i] + pb[i];
    return c;
  }

  DTensor scale(const DTensor& x, float s) override {
    DTensor y = make_uninit(x.shape);
    const float* px = ptr(x);
    float* py = ptr(y);
    const int64_t n = x.numel();
#pragma omp parallel for num_threads(cpu_threads()) schedule(static) if (n > kParallelElements)
    for (int64_t i = 0; i < n; ++i) py[i] = px[i] * s;
    return y;
  }

  DTensor layer_norm(const DTensor& x, const DTensor& gamma, const DTensor& beta,
                     float eps) override {
    const int64_t d = last_dim(x);
    require(gamma.numel() == d && beta.numel() == d, "layer_norm", "gamma/beta size");
    DTensor y = make_uninit(x.shape);  // every row is assigned
    MatMap X = rows_of(x, d), Y = rows_of(y, d);
    auto g = rows_of(gamma, d).row(0), bt = rows_of(beta, d).row(0);
#pragma omp parallel for num_threads(cpu_threads()) schedule(static) if (X.size() > kParallelElements)
    for (int64_t r = 0; r < X.rows(); ++r) {
      const float mean = X.row(r).mean();
      const float var = (X.row(r).array() - mean).square().mean();
      const float inv = 1.0f / std::sqrt(var + eps);
      Y.row(r) = ((X.row(r).array() - mean) * inv * g.array() + bt.array()).matrix();
    }
    return y;
  }

  DTensor scale_norm(const DTensor& x, const DTensor& g, float eps) override {
    const int64_t d = last_dim(x);
    require(g.numel() == 1, "scale_norm", "g must have one element");
    const float gv = ptr(g)[0];
    DTensor y = make_uninit(x.shape);
    MatMap X = rows_of(x, d), Y = rows_of(y, d);
    for (int64_t r = 0; r < X.rows(); ++r)
      Y.row(r) = X.row(r) * (gv / std::max(X.row(r).norm(), eps));
    return y;
  }

  DTensor row_normalize(const DTensor& x, float eps) override {
    const int64_t d = last_dim(x);
    DTensor y = make_uninit(x.shape);
    MatMap X = rows_of(x, d), Y = rows_of(y, d);
    for (int64_t r = 0; r < X.rows(); ++r) Y.row(r) = X.row(r) / std::max(X.row(r).norm(), eps);
    return y;
  }

  DTensor activation(const DTensor& x, Activation kind) override {
    DTensor y = make_uninit(x.shape);
    const float* px = ptr(x);
    float* py = ptr(y);
    const int64_t n = x.numel();
    switch (kind) {
      case Activation::ReLU:
        for (int64_t i = 0; i < n; ++i) py[i] = px[i] > 0.0f ? px[i] : 0.0f;
        break;
      case Activation::GeluErf:
#pragma omp parallel for num_threads(cpu_threads()) schedule(static) if (n > 65536)
        for (int64_t i = 0; i < n; ++i)
          py[i] = 0.5f * px[i] * (1.0f + std::erf(px[i] * 0.70710678118654752f));
        break;
      case Activation::GeluTanh:
        gelu_tanh(px, py, n);
        break;
      case Activation::Silu:
#pragma omp parallel for num_threads(cpu_threads()) schedule(static) if (n > 65536)
        for (int64_t i = 0; i < n; ++i) py[i] = px[i] / (1.0f + std::exp(-px[i]));
        break;
    }
    return y;
  }

  DTensor rms_norm(const DTensor& x, const DTensor& w, float eps) override {
    const int64_t d = last_dim(x);
    require(w.numel() == d, "rms_norm", "weight " + shape_str(w.shape) + " for input " + shape_str(x.shape));
    DTensor y = make_uninit(x.shape);
    MatMap X = rows_of(x, d), Y = rows_of(y, d);
    auto g = rows_of(w, d).row(0);
#pragma omp parallel for num_threads(cpu_threads()) schedule(static) if (X.size() > kParallelElements)
    for (int64_t r = 0; r < X.rows(); ++r) {
      const float inv = 1.0f / std::sqrt(X.row(r).squaredNorm() / float(d) + eps);
      Y.row(r) = (X.row(r).array() * inv * g.array()).matrix();
    }
    return y;
  }

  DTensor mul(const DTensor& a, const DTensor& b) override {
    require(a.shape == b.shape, "mul", shape_str(a.shape) + " * " + shape_str(b.shape));
    DTensor c = make_uninit(a.shape);
    const float *pa = ptr(a), *pb = ptr(b);
    float* pc = ptr(c);
    const int64_t n = a.numel();
#pragma omp parallel for num_threads(cpu_threads()) schedule(static) if (n > kParallelElements)
    for (int64_t i = 0; i < n; ++i) pc[i] = pa[i] * pb[i];
    return c;
  }

  DTensor repeat_heads(const DTensor& x, int64_t groups, int64_t d_head) override {
    require(x.shape.size() == 2 && groups >= 1 && d_head >= 1 && x.shape[1] % d_head == 0,
            "repeat_heads", shape_str(x.shape) + " in heads of " + std::to_string(d_head));
    if (groups == 1) return x;
    const int64_t L = x.shape[0], kv = x.shape[1] / d_head;
    DTensor y = make_uninit({L, kv * groups * d_head});  // every head of every row is copied
    const float* px = ptr(x);
    float* py = ptr(y);
    for (int64_t l = 0; l < L; ++l)
      for (int64_t h = 0; h < kv * groups; ++h)
        std::copy_n(px + (l * kv + h / groups) * d_head, d_head, py + (l * kv * groups + h) * d_head);
    return y;
  }

  DTensor embedding(const DTensor& table, const std::vector<int32_t>& ids, float s) override {
    require(table.shape.size() == 2, "embedding", "table must be 2-D");
    const int64_t v = table.shape[0], d = table.shape[1];
    DTensor y = make_uninit({static_cast<int64_t>(ids.size()), d});  // every row is assigned
    for (size_t i = 0; i < ids.size(); ++i)
      require(ids[i] >= 0 && ids[i] < v, "embedding",
              "token id " + std::to_string(ids[i]) + " outside vocab of " + std::to_string(v));
    MatMap Y = rows_of(y, d);
    if (const PackedMatrix* m = packed_of(table)) {  // only the rows gathered are converted
      for (size_t i = 0; i < ids.size(); ++i) {
        dequantize_rows(*m, ids[i], 1, ptr(y) + int64_t(i) * d);
        Y.row(static_cast<int64_t>(i)) *= s;
      }
      return y;
    }
    MatMap T = rows_of(table, d);
    for (size_t i = 0; i < ids.size(); ++i) Y.row(static_cast<int64_t>(i)) = T.row(ids[i]) * s;
    return y;
  }

  AttentionResult attention(const DTensor& q, const DTensor& k, const DTensor& v,
                            const AttentionArgs& args) override {
    const int64_t H = args.heads;
    require(H >= 1 && q.shape.size() == 2 && k.shape.size() == 2 && v.shape.size() == 2,
            "attention", "q, k, v must be 2-D");
    const int64_t lq = q.shape[0], lk = k.shape[0], dk = q.shape[1] / H, dv = v.shape[1] / H;
    require(q.shape[1] == k.shape[1] && q.shape[1] % H == 0 && v.shape[1] % H == 0 &&
                v.shape[0] == lk,
            "attention", "shapes q " + shape_str(q.shape) + " k " + shape_str(k.shape) +
                             " v " + shape_str(v.shape));
    const AttentionMask& mask = args.mask;
    require(mask.key_valid.empty() || static_cast<int64_t>(mask.key_valid.size()) == lk,
            "attention", "key_valid length");
    require(mask.allowed.empty() || static_cast<int64_t>(mask.allowed.size()) == lq * lk,
            "attention", "allowed mask size");

    AttentionResult r;
    r.out = make({lq, H * dv});
    // Every row of these is written below (a softmax or zeros; scores with -inf where masked).
    if (args.want_probs) r.probs = make_uninit({H, lq, lk});
    if (args.want_scores) r.scores = make_uninit({H, lq, lk});
    // No key to attend to: all-zero rows (the fully-masked rule), without reaching Eigen's
    // reductions over empty rows.
    if (lk == 0 || lq == 0) return r;
    MatMap Q = rows_of(q, H * dk), K = rows_of(k, H * dk), V = rows_of(v, H * dv);
    MatMap O = rows_of(r.out, H * dv);

    // One head per thread; Eigen's products inside stay single-threaded in a parallel region.
    // Rows go block by block (attention_rows.h): a head needs at most one block of scores at a
    // time when its probabilities are not kept, and keys above the causal span are never multiplied.
    const std::vector<KeyBlock> key_blocks = attention_key_blocks(mask, lq, lk);
#pragma omp parallel for num_threads(cpu_threads()) schedule(static) if (H > 1 && lq * lk > 4096)
    for (int64_t h = 0; h < H; ++h) {
      Mat local;
      if (!args.want_probs) local.resize(std::min(lq, 2 * kAttentionBlockRows), lk);
      const HeadRows Qh = head_rows(Q.data(), lq, h, dk, H), Kh = head_rows(K.data(), lk, h, dk, H);
      for (const KeyBlock& b : key_blocks) {
        float* P = args.want_probs ? ptr(r.probs) + (h * lq + b.r0) * lk : local.data();
        float* S = args.want_scores ? ptr(r.scores) + (h * lq + b.r0) * lk : nullptr;
        attention_block(Qh, Kh, mask, args.scale, b, P, S);
        if (dv > 0 && b.k1 > b.k0)  // weights outside a block's keys are zero
          O.block(b.r0, h * dv, b.rows, dv).noalias() =
              MatMap(P, b.rows, lk).middleCols(b.k0, b.k1 - b.k0) * V.block(b.k0, h * dv, b.k1 - b.k0, dv);
      }
    }
    return r;
  }
};

}  // namespace

void set_quantized_products(QuantizedProducts products) {
  g_int8_activations.store(products == QuantizedProducts::Int8Activations);
}
QuantizedProducts quantized_products() {
  return g_int8_activations.load() ? QuantizedProducts::Int8Activations : QuantizedProducts::Exact;
}

void set_cpu_threads(int threads) { g_cpu_threads.store(std::max(threads, 0)); }

int cpu_threads() {
  const int t = g_cpu_threads.load();
  return t > 0 ? t : omp_get_max_threads();
}

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace atlas
