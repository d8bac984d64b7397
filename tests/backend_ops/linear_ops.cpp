// Test cases of linear, add, scale, mul, activation, embedding and repeat_heads (op_case.h).
// References are double-precision loops (these ops' only other implementation is the CPU
// backend itself) or, for repeat_heads, its host reference; bounds are stated per op.
// Linear also runs with weights held in a GGUF file's encoding (Tensor::packed, every type the
// engine reads), against the double loop over their dequantized values.
#include <cmath>
#include <memory>

#include "core/backend/op_registry.h"
#include "core/formats/ggml_types.h"
#include "core/formats/packed_weights.h"
#include "tests/core/gguf_model_writer.h"
#include "tests/backend_ops/compare.h"
#include "tests/backend_ops/op_case.h"

namespace atlas::op_test {
namespace {

using train::MatT;
using train::ParamsT;
using train::Tape;

// ---- linear: y = x w^T + b ------------------------------------------------------------
// `type`: the weight's ggml type when it is held encoded (Tensor::packed), -1 for a float32 tensor.
struct LinearShape { int64_t m, k, n; bool bias; int type = -1; };
struct LinearIn {
  Tensor x, w, b;
  bool bias;
  int type;
  std::vector<float> w_values;  // [n, k]: w as float (the dequantized blocks of an encoded one)
};

// A weight of `type` held as its blocks, and the values dequantize_ggml gives them.
LinearIn encoded_weight(LinearIn in, int64_t n, int64_t k, uint32_t seed) {
  const gguf_test::Weight w = gguf_test::typed_weight(n, k, uint32_t(in.type), seed);
  auto bytes = std::make_shared<std::vector<uint8_t>>(w.bytes.begin(), w.bytes.end());
  const GgmlTypeInfo info = ggml_type_info(uint32_t(in.type));
  PackedMatrix m;
  m.type = uint32_t(in.type);
  m.rows = n;
  m.cols = k;
  m.row_bytes = k / info.block_elems * info.block_bytes;
  m.data = bytes->data();
  m.owner = bytes;
  in.w = packed_tensor(m);
  in.w_values.assign(w.v.begin(), w.v.end());
  return in;
}

// Per element, the bound of docs/quantized-models.md. Float weights (float32, F16, BF16) meet
// float activations: (K + 2) u sum |x w| (+ |b|). Block types may quantize x per 32 values to
// d q with d = amax / 127 (the CPU backend's products; Vulkan dequantizes in the shader and
// stays within the float bound): sum |w| amax / 254 plus the blocked epilogue's rounding,
// (K / 16 + 8) 2^-21 sum max_block|w| |x|.
std::vector<double> linear_tolerance(const LinearIn& in) {
  const int64_t M = in.x.shape[0], K = in.x.shape[1], N = int64_t(in.w_values.size()) / K;
  const bool float_weights = in.type < 0 || ggml_type::is_float(uint32_t(in.type));
  std::vector<double> tol(size_t(M * N));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double mag = in.bias ? std::fabs(in.b.data[size_t(n)]) : 0.0, quant = 0.0;
      for (int64_t k0 = 0; k0 < K; k0 += 32) {
        double amax = 0, wmax = 0;
        const int64_t k1 = std::min(K, k0 + 32);
        for (int64_t k = k0; k < k1; ++k) {
          amax = std::max(amax, std::fabs(double(in.x.data[size_t(m * K + k)])));
          wmax = std::max(wmax, std::fabs(double(in.w_values[size_t(n * K + k)])));
        }
        for (int64_t k = k0; k < k1; ++k) {
          const double x = in.x.data[size_t(m * K + k)], w = in.w_values[size_t(n * K + k)];
          mag += float_weights ? std::fabs(x * w) : wmax * std::fabs(x);
          quant += float_weights ? 0.0 : std::fabs(w) * amax / 254.0 * (1 + 1e-6);
        }
      }
      tol[size_t(m * N + n)] = float_weights ? (K + 2) * kU * mag + 1e-30
                                             : quant + double(K / 16 + 8) * 0x1p-21 * mag + 1e-30;
    }
  return tol;
}

const Register linear_case(make_case(OpTest<LinearShape, LinearIn>{
    Op::Linear,
    {"y"},
    {{1, 1, 1, true}, {3, 17, 5, false}, {17, 63, 65, true}, {63, 65, 127, true},
     {65, 129, 63, false}, {129, 3, 17, true}, {1, 512, 129, true}, {130, 100, 1, true},
     {64, 64, 64, false}, {200, 257, 96, true}, {128, 128, 128, true},
     // Encoded weights: one block and several per row (K-quants: 256 values a block), 1 row of
     // x and the small-m path's 2-8, odd row counts either side of the 64-row tiles.
     {1, 64, 3, false, ggml_type::F16}, {67, 96, 65, true, ggml_type::BF16},
     {1, 32, 1, false, ggml_type::Q8_0}, {5, 96, 67, true, ggml_type::Q8_0}, {70, 160, 33, false, ggml_type::Q8_0},
     {3, 64, 17, true, ggml_type::Q4_0}, {9, 96, 65, false, ggml_type::Q4_1},
     {2, 64, 63, true, ggml_type::Q5_0}, {65, 32, 5, false, ggml_type::Q5_1},
     {1, 256, 7, true, ggml_type::Q4_K}, {66, 512, 17, false, ggml_type::Q4_K},
     {4, 256, 65, false, ggml_type::Q5_K}, {7, 512, 3, true, ggml_type::Q6_K}, {65, 256, 9, false, ggml_type::Q6_K}},
    [](const LinearShape& s) {
      return dims({s.m, s.k, s.n}) + (s.bias ? " bias" : "") +
             (s.type >= 0 ? std::string(" w ") + ggml_type_info(uint32_t(s.type)).name : "");
    },
    [](const LinearShape& s, uint32_t seed) {
      LinearIn in{random_tensor({s.m, s.k}, seed), random_tensor({s.n, s.k}, seed + 1),
                  random_tensor({s.n}, seed + 2), s.bias, s.type, {}};
      if (s.type >= 0) return encoded_weight(std::move(in), s.n, s.k, seed + 3);
      in.w_values.assign(in.w.data.begin(), in.w.data.end());
      return in;
    },
    [](Backend& be, const LinearIn& in) {
      // An encoded tensor is a model weight: upload_weight holds it as stored.
      const DTensor w = in.type >= 0 ? be.upload_weight(in.w) : be.upload(in.w);
      return std::vector<Tensor>{be.download(be.linear(be.upload(in.x), w, in.bias ? be.upload(in.b) : DTensor{}))};
    },
    [](const LinearIn& in) {
      const int64_t M = in.x.shape[0], K = in.x.shape[1], N = in.w.shape[0];
      Want y{{M, N}, std::vector<double>(size_t(M * N))};
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          double s = in.bias ? in.b.data[size_t(n)] : 0.0;
          for (int64_t k = 0; k < K; ++k) s += double(in.x.data[size_t(m * K + k)]) * in.w_values[size_t(n * K + k)];
          y.data[size_t(m * N + n)] = s;
        }
      return std::vector<Want>{y};
    },
    [](const LinearIn& in, size_t, const std::vector<double>&) { return linear_tolerance(in); },
    [](const LinearIn& in) -> std::optional<TapeOp> {
      if (in.type >= 0) return std::nullopt;  // training converts encoded weights first
      TapeOp t{{{"x", to_mat(in.x)}, {"w", to_mat(in.w)}}, {}};
      if (in.bias) t.params["b"] = to_mat(in.b);
      const bool bias = in.bias;
      t.record = [bias](Tape<double>& tape, const ParamsT<double>& p) {
        return tape.linear(tape_param(tape, p, "x"), tape_param(tape, p, "w"),
                           bias ? tape_param(tape, p, "b") : -1);
      };
      return t;
    }}));

// ---- add, scale, mul: one IEEE operation per element ---------------------------------
const std::vector<Shape> kElementShapes = {{1}, {3}, {17}, {63}, {65}, {127}, {129}, {3, 333}, {100003}};

std::string elements(const Shape& s) {
  std::string out;
  for (int64_t v : s) {
    if (!out.empty()) out += 'x';
    out += std::to_string(v);
  }
  return out;
}

struct PairIn { Tensor a, b; };
PairIn pair_in(const Shape& s, uint32_t seed) { return {random_tensor(s, seed, -4, 4), random_tensor(s, seed + 1, -4, 4)}; }

std::vector<Want> elementwise(const PairIn& in, float (*f)(float, float)) {
  Want w{in.a.shape, std::vector<double>(in.a.data.size())};
  for (size_t i = 0; i < w.data.size(); ++i) w.data[i] = f(in.a.data[i], in.b.data[i]);  // float op, widened
  return {w};
}

// The device must agree bit for bit with float32: tolerance 0.
std::vector<double> exact(const PairIn&, size_t, const std::vector<double>& want) { return uniform_tol(want.size(), 0.0); }

const Register add_case(make_case(OpTest<Shape, PairIn>{
    Op::Add,
    {"a + b"},
    kElementShapes,
    elements,
    pair_in,
    [](Backend& be, const PairIn& in) {
      return std::vector<Tensor>{be.download(be.add(be.upload(in.a), be.upload(in.b)))};
    },
    [](const PairIn& in) { return elementwise(in, [](float a, float b) { return a + b; }); },
    exact,
    [](const PairIn& in) -> std::optional<TapeOp> {
      return TapeOp{{{"a", to_mat(in.a)}, {"b", to_mat(in.b)}},
                    [](Tape<double>& t, const ParamsT<double>& p) {
                      return t.add(tape_param(t, p, "a"), tape_param(t, p, "b"));
                    }};
    }}));

const Register scale_case(make_case(OpTest<Shape, PairIn>{
    Op::Scale, {"-0.37 a"}, kElementShapes, elements, pair_in,
    [](Backend& be, const PairIn& in) { return std::vector<Tensor>{be.download(be.scale(be.upload(in.a), -0.37f))}; },
    [](const PairIn& in) { return elementwise(in, [](float a, float) { return a * -0.37f; }); }, exact,
    {}}));

// One rounding of the exact product: |err| <= u |a b|.
const Register mul_case(make_case(OpTest<Shape, PairIn>{
    Op::Mul,
    {"a * b"},
    kElementShapes,
    elements,
    pair_in,
    [](Backend& be, const PairIn& in) {
      return std::vector<Tensor>{be.download(be.mul(be.upload(in.a), be.upload(in.b)))};
    },
    [](const PairIn& in) {
      Want w{in.a.shape, std::vector<double>(in.a.data.size())};
      for (size_t i = 0; i < w.data.size(); ++i) w.data[i] = double(in.a.data[i]) * in.b.data[i];
      return std::vector<Want>{w};
    },
    [](const PairIn&, size_t, const std::vector<double>& want) { return rel_tol(want, 0.0, kU); },
    [](const PairIn& in) -> std::optional<TapeOp> {
      return TapeOp{{{"a", to_mat(in.a)}, {"b", to_mat(in.b)}},
                    [](Tape<double>& t, const ParamsT<double>& p) {
                      return t.multiply(tape_param(t, p, "a"), tape_param(t, p, "b"));
                    }};
    }}));

// ---- activation -----------------------------------------------------------------------
struct ActivationShape { Shape shape; Activation kind; };
struct ActivationIn { Tensor x; Activation kind; };

const char* activation_name(Activation a) {
  switch (a) {
    case Activation::ReLU: return "relu";
    case Activation::GeluErf: return "gelu_erf";
    case Activation::GeluTanh: return "gelu_tanh";
    default: return "silu";
  }
}

std::vector<ActivationShape> activation_shapes() {
  std::vector<ActivationShape> out;
  for (const Shape& s : kElementShapes) out.push_back({s, Activation::ReLU});
  for (Activation a : {Activation::GeluErf, Activation::GeluTanh, Activation::Silu})
    // {2, 65600}: more than one of the CPU backend's 65536-element chunks (gelu_tanh)
    for (const Shape& s : {Shape{1}, Shape{63}, Shape{129}, Shape{3, 333}, Shape{4099}, Shape{2, 65600}})
      out.push_back({s, a});
  return out;
}

const Register activation_case(make_case(OpTest<ActivationShape, ActivationIn>{
    Op::Activation,
    {"y"},
    activation_shapes(),
    [](const ActivationShape& s) {
      return std::string(activation_name(s.kind)) + " " + elements(s.shape);
    },
    [](const ActivationShape& s, uint32_t seed) {
      return ActivationIn{random_tensor(s.shape, seed, -6, 6), s.kind};
    },
    [](Backend& be, const ActivationIn& in) {
      return std::vector<Tensor>{be.download(be.activation(be.upload(in.x), in.kind))};
    },
    [](const ActivationIn& in) {
      Want w{in.x.shape, std::vector<double>(in.x.data.size())};
      for (size_t i = 0; i < w.data.size(); ++i) {
        const double v = in.x.data[i];
        switch (in.kind) {
          case Activation::ReLU:
            w.data[i] = in.x.data[i] > 0 ? in.x.data[i] : 0.0f;
            break;
          case Activation::GeluErf:
            w.data[i] = 0.5 * v * std::erfc(-v / std::sqrt(2.0));
            break;
          case Activation::GeluTanh:
            w.data[i] = 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
            break;
          default:
            w.data[i] = v / (1 + std::exp(-v));
        }
      }
      return std::vector<Want>{w};
    },
    // ReLU exact; GELU (both forms) |err| <= 3e-7 max(1, |x|) (float rounding of a few ulp; the
    // shaders' erf approximation is within 1e-10); SiLU |err| <= 1e-7 + 1e-6 |y|.
    [](const ActivationIn& in, size_t, const std::vector<double>& want) {
      std::vector<double> tol(want.size(), 0.0);
      if (in.kind == Activation::Silu) return rel_tol(want, 1e-7, 1e-6);
      if (in.kind != Activation::ReLU)
        for (size_t i = 0; i < tol.size(); ++i)
          tol[i] = 3e-7 * std::max(1.0, std::fabs(double(in.x.data[i])));
      return tol;
    },
    [](const ActivationIn& in) -> std::optional<TapeOp> {
      // ReLU's kink: a probe across 0 is not differentiable (inputs within 1e-4 of it).
      bool smooth = true;
      for (float v : in.x.data)
        smooth = smooth && !(in.kind == Activation::ReLU && std::fabs(v) < 1e-4f);
      const FfnActivation f = in.kind == Activation::ReLU      ? FfnActivation::ReLU
                              : in.kind == Activation::GeluErf ? FfnActivation::Gelu
                              : in.kind == Activation::GeluTanh ? FfnActivation::GeluTanh
                                                                : FfnActivation::Silu;
      return TapeOp{{{"x", to_mat(in.x)}},
                    [f](Tape<double>& t, const ParamsT<double>& p) {
                      return t.activation(tape_param(t, p, "x"), f);
                    },
                    smooth};
    }}));

// ---- embedding: rows of the table times a scale, exact ------------------------------------
struct EmbeddingShape { int64_t vocab, d; std::vector<int32_t> ids; float scale; };
struct EmbeddingIn { Tensor table; std::vector<int32_t> ids; float scale; };

const Register embedding_case(make_case(OpTest<EmbeddingShape, EmbeddingIn>{
    Op::Embedding, {"rows"},
    {{1, 1, {0}, 1.0f},
     {17, 3, {16, 0, 5, 5, 16}, 22.627417f},
     {129, 65, {128, 1, 2, 3, 64, 127, 0, 0, 100}, 0.5f},
     {50, 129, std::vector<int32_t>(63, 7), 1.0f},
     {300, 64, {299, 0, 128, 129, 64, 63}, 8.0f},
     {5, 4, {}, 1.0f}},
    [](const EmbeddingShape& s) {
      return "vocab " + std::to_string(s.vocab) + " d " + std::to_string(s.d) + " ids " + std::to_string(s.ids.size());
    },
    [](const EmbeddingShape& s, uint32_t seed) { return EmbeddingIn{random_tensor({s.vocab, s.d}, seed), s.ids, s.scale}; },
    [](Backend& be, const EmbeddingIn& in) {
      return std::vector<Tensor>{be.download(be.embedding(be.upload(in.table), in.ids, in.scale))};
    },
    [](const EmbeddingIn& in) {
      const int64_t d = in.table.shape[1];
      Want w{{int64_t(in.ids.size()), d}, {}};
      for (int32_t id : in.ids)
        for (int64_t j = 0; j < d; ++j) w.data.push_back(in.table.data[size_t(id * d + j)] * in.scale);
      return std::vector<Want>{w};
    },
    [](const EmbeddingIn&, size_t, const std::vector<double>& want) { return uniform_tol(want.size(), 0.0); },
    [](const EmbeddingIn& in) -> std::optional<TapeOp> {
      const std::vector<int32_t> ids = in.ids;
      const double s = in.scale;
      if (ids.empty()) return std::nullopt;
      return TapeOp{{{"table", to_mat(in.table)}}, [ids, s](Tape<double>& t, const ParamsT<double>& p) {
                      return t.gather_rows(tape_param(t, p, "table"), ids, s);
                    }};
    }}));

// ---- repeat_heads: a copy, exact -------------------------------------------------------------
struct RepeatShape { int64_t L, kv, groups, d_head; };
struct RepeatIn { Tensor x; int64_t groups, d_head; };

const Register repeat_heads_case(make_case(OpTest<RepeatShape, RepeatIn>{
    Op::RepeatHeads, {"heads"},
    {{1, 1, 1, 1}, {37, 3, 4, 15}, {65, 2, 2, 64}, {129, 1, 8, 16}, {7, 4, 1, 3}, {3, 2, 64, 1}},
    [](const RepeatShape& s) {
      return "L " + std::to_string(s.L) + " kv " + std::to_string(s.kv) + " groups " + std::to_string(s.groups) +
             " d_head " + std::to_string(s.d_head);
    },
    [](const RepeatShape& s, uint32_t seed) { return RepeatIn{random_tensor({s.L, s.kv * s.d_head}, seed), s.groups, s.d_head}; },
    [](Backend& be, const RepeatIn& in) {
      return std::vector<Tensor>{be.download(be.repeat_heads(be.upload(in.x), in.groups, in.d_head))};
    },
    [](const RepeatIn& in) { return std::vector<Want>{want_of(repeat_heads_reference(in.x, in.groups, in.d_head))}; },
    [](const RepeatIn&, size_t, const std::vector<double>& want) { return uniform_tol(want.size(), 0.0); },
    [](const RepeatIn& in) -> std::optional<TapeOp> {
      const int64_t g = in.groups, dh = in.d_head;
      return TapeOp{{{"x", to_mat(in.x)}}, [g, dh](Tape<double>& t, const ParamsT<double>& p) {
                      return t.repeat_heads(tape_param(t, p, "x"), g, dh);
                    }};
    }}));

}  // namespace
}  // namespace atlas::op_test
