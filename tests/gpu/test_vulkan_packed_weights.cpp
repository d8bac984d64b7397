// Weights held in their file's encoding on the Vulkan device (gpu/vk_packed.cpp): the encoded
// rows are uploaded as stored and linear_packed.comp / embedding_packed.comp dequantize them in
// the shader. Oracle: the blocks converted by dequantize_ggml (itself checked against values
// worked by hand in tests/core/test_gguf.cpp), then naive double loops written here. Random
// blocks of every supported ggml type (tests/core/gguf_model_writer.h's typed_weight) at odd
// shapes; a small GGUF model of each type on Vulkan against the CPU backend's exact products.
#include <cmath>
#include <memory>

#include "core/formats/ggml_types.h"
#include "core/formats/gguf_model.h"
#include "core/formats/packed_weights.h"
#include "core/model/model.h"
#include "tests/core/gguf_model_writer.h"
#include "tests/gpu/gpu_test_util.h"

using namespace atlas;
using namespace atlas::gpu_test;
using gguf_test::T_BF16;
using gguf_test::T_F16;
using gguf_test::T_F32;
using gguf_test::T_Q4_0;
using gguf_test::T_Q4_1;
using gguf_test::T_Q4_K;
using gguf_test::T_Q5_0;
using gguf_test::T_Q5_1;
using gguf_test::T_Q5_K;
using gguf_test::T_Q6_K;
using gguf_test::T_Q8_0;

namespace {

const uint32_t kEncodedTypes[] = {T_F16,  T_BF16, T_Q8_0, T_Q4_0, T_Q4_1,
                                  T_Q5_0, T_Q5_1, T_Q4_K, T_Q5_K, T_Q6_K};

// A packed weight [rows, cols] of random blocks of `type`, and its values as dequantize_ggml
// reads them (F32: random floats as bytes).
struct EncodedWeight {
  Tensor tensor;
  std::vector<float> values;
};

EncodedWeight encoded_weight(uint32_t type, int64_t rows, int64_t cols, uint32_t seed) {
  auto bytes = std::make_shared<std::vector<uint8_t>>();
  std::vector<float> values;
  if (type == T_F32) {
    values = random_values(size_t(rows * cols), seed);
    bytes->resize(values.size() * 4);
    std::memcpy(bytes->data(), values.data(), bytes->size());
  } else {
    const gguf_test::Weight w = gguf_test::typed_weight(rows, cols, type, seed);
    bytes->assign(w.bytes.begin(), w.bytes.end());
  }
  const GgmlTypeInfo info = ggml_type_info(type);
  PackedMatrix m;
  m.type = type;
  m.rows = rows;
  m.cols = cols;
  m.row_bytes = cols / info.block_elems * info.block_bytes;
  m.data = bytes->data();
  m.owner = bytes;
  values.resize(size_t(rows * cols));
  dequantize_ggml(type, bytes->data(), rows * cols / info.block_elems, values.data());
  return {packed_tensor(m), values};
}

// y = x w^T + b in double, and the tolerance of float rounding: 1e-5 of sum |x| |w| (+ |b|).
void naive_linear(const Tensor& x, const std::vector<float>& w, const Tensor* b, int64_t out,
                  std::vector<double>& y, std::vector<double>& tol) {
  const int64_t in = x.shape[1], m = x.shape[0];
  y.assign(size_t(m * out), 0.0);
  tol.assign(size_t(m * out), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t o = 0; o < out; ++o) {
      double s = b ? b->data[size_t(o)] : 0.0, mag = b ? std::fabs(b->data[size_t(o)]) : 0.0;
      for (int64_t k = 0; k < in; ++k) {
        const double p = double(x.data[size_t(i * in + k)]) * w[size_t(o * in + k)];
        s += p;
        mag += std::fabs(p);
      }
      y[size_t(i * out + o)] = s;
      tol[size_t(i * out + o)] = 1e-5 * mag + 1e-30;
    }
}

std::string packed_type_name(uint32_t type) { return ggml_type_info(type).name; }

}  // namespace

TEST_CASE("Vulkan linear by a weight held in every encoding matches the dequantized product",
          "[vulkan][packed]") {
  Gpu g;
  for (uint32_t type : kEncodedTypes) {
    const int64_t be = ggml_type_info(type).block_elems;
    // One block and several; for F16 / BF16 a "block" is one value, so odd widths instead
    // (rows of 2 x 45 bytes are not whole words).
    const std::vector<int64_t> ins = be == 1 ? std::vector<int64_t>{1, 45} : std::vector<int64_t>{be, 3 * be};
    uint32_t seed = 10;
    for (int64_t in : ins)
      for (int64_t out : {1, 5, 40})
        for (int64_t m : {1, 3, 33}) {
          INFO(packed_type_name(type) << " x [" << m << ", " << in << "] w [" << out << ", " << in << "]");
          const EncodedWeight w = encoded_weight(type, out, in, ++seed);
          const Tensor x = random_tensor({m, in}, ++seed);
          const Tensor b = random_tensor({out}, ++seed);
          const bool with_bias = (m + out) % 2 == 0;
          std::vector<double> want, tol;
          naive_linear(x, w.values, with_bias ? &b : nullptr, out, want, tol);
          const DTensor dw = g.vk->upload_weight(w.tensor);
          const Tensor got = g.vk->download(
              g.vk->linear(g.vk->upload(x), dw, with_bias ? g.vk->upload(b) : DTensor{}));
          REQUIRE(got.shape == Shape{m, out});
          require_close(got.data, want, tol, "linear by " + packed_type_name(type));
        }
  }
  // Kept encoded: no line saying a type was converted to float32 on upload.
  CHECK(g.vk->fallbacks().empty());
}

TEST_CASE("Vulkan linear by an encoded weight bound in windows of a small storage-buffer range",
          "[vulkan][packed]") {
  VulkanOptions o = options();
  o.max_binding_bytes = 1024;  // a Q8_0 row of 96 values is 102 bytes: 9 rows per window
  Gpu g(o);
  for (uint32_t type : {T_Q8_0, T_Q5_1, T_Q4_0, T_F16}) {
    INFO(packed_type_name(type));
    const int64_t in = type == T_F16 ? 46 : 96, out = 40, m = 5;  // x rows of 384 bytes
    const EncodedWeight w = encoded_weight(type, out, in, 7);
    const Tensor x = random_tensor({m, in}, 8), b = random_tensor({out}, 9);
    std::vector<double> want, tol;
    naive_linear(x, w.values, &b, out, want, tol);
    const Tensor got =
        g.vk->download(g.vk->linear(g.vk->upload(x), g.vk->upload_weight(w.tensor), g.vk->upload(b)));
    require_close(got.data, want, tol, "windowed linear by " + packed_type_name(type));
  }
  CHECK(g.vk->fallbacks().empty());
}

TEST_CASE("Vulkan embedding gathers and dequantizes rows of an encoded table", "[vulkan][packed]") {
  Gpu g;
  for (uint32_t type : kEncodedTypes) {
    INFO(packed_type_name(type));
    const int64_t be = ggml_type_info(type).block_elems;
    const int64_t vocab = 7, d = be == 1 ? 45 : 2 * be;
    const EncodedWeight t = encoded_weight(type, vocab, d, 3);
    const std::vector<int32_t> ids = {6, 0, 3, 3, 1, 6};
    std::vector<double> want;
    for (int32_t id : ids)
      for (int64_t c = 0; c < d; ++c) want.push_back(double(t.values[size_t(id * d + c)] * 1.5f));
    const Tensor got = g.vk->download(g.vk->embedding(g.vk->upload_weight(t.tensor), ids, 1.5f));
    REQUIRE(got.shape == Shape{int64_t(ids.size()), d});
    require_close(got.data, want, rel_tol(want, 0.0, 1e-6), "embedding from " + packed_type_name(type));
  }
  CHECK(g.vk->fallbacks().empty());
}

TEST_CASE("an encoded weight on Vulkan downloads as its dequantized values and is refused by other ops",
          "[vulkan][packed]") {
  Gpu g;
  const EncodedWeight w = encoded_weight(T_Q4_K, 3, 256, 5);
  const DTensor dw = g.vk->upload_weight(w.tensor);
  const Tensor back = g.vk->download(dw);
  REQUIRE(back.shape == Shape{3, 256});
  CHECK((back.data == w.values));  // the same conversion, bit for bit
  const std::vector<Tensor> both = g.vk->download_all({dw, g.vk->upload(random_tensor({2}, 1))});
  CHECK((both[0].data == back.data));
  try {
    g.vk->add(dw, dw);
    FAIL("add read an encoded weight");
  } catch (const AtlasError& e) {
    const std::string m = e.what();
    CHECK(m.find("add") != std::string::npos);
    CHECK(m.find("Q4_K") != std::string::npos);
  }
  CHECK_THROWS_AS(g.vk->rms_norm(g.vk->upload(random_tensor({2, 256}, 2)), dw, 1e-5f), AtlasError);
  // F32 in the file is float32 already: an ordinary tensor every op reads.
  const EncodedWeight f = encoded_weight(T_F32, 2, 3, 6);
  const Tensor f_back = g.vk->download(g.vk->scale(g.vk->upload_weight(f.tensor), 1.0f));
  CHECK((f_back.data == f.values));
  CHECK(g.vk->fallbacks().empty());
}

TEST_CASE("a GGUF model of every encoding runs on Vulkan as the CPU backend's exact products",
          "[vulkan][packed][gguf]") {
  const gguf_test::ScopedQuantizedProducts exact(QuantizedProducts::Exact);
  for (uint32_t type : kEncodedTypes) {
    gguf_test::Arch a;
    a.matrix_type = type;
    if (ggml_type_info(type).block_elems == 256) a.ff = 256;  // ffn_down rows: one super-block
    INFO(packed_type_name(type));
    const std::filesystem::path path = gguf_test::write(gguf_test::make_file(a), "vk-packed");
    GgufLoadOptions lo;
    lo.tokenizer = false;
    const Model model = load_gguf_model(path.string(), lo);
    std::vector<TokenInfo> tokens;
    for (int id : {3, 170, 5, 5, 9, 30, 259, 170, 8, 1, 39, 0}) tokens.push_back({id, std::to_string(id)});
    Gpu g;
    RunOptions on_vk;
    on_vk.backend = g.vk.get();
    const RunResult got = model.forward(tokens, {}, on_vk);
    const RunResult want = model.forward(tokens, {}, RunOptions{});
    REQUIRE(got.output.shape == want.output.shape);
    std::vector<double> logits(want.output.data.begin(), want.output.data.end());
    require_close(got.output.data, logits, 1e-4, "logits");
    for (int64_t l = 0; l < a.layers; ++l) {
      const std::string name = "decoder.layer" + std::to_string(l) + ".self_attn";
      REQUIRE(got.trace.find(name));
      const Tensor& p = want.trace.find(name)->tensor;
      require_close(got.trace.find(name)->tensor.data, std::vector<double>(p.data.begin(), p.data.end()),
                    1e-4, name);
    }
    for (const std::string& line : g.vk->fallbacks())
      CHECK(line.find("converted to float32") == std::string::npos);
    CHECK(g.vk->fallbacks().empty());
    std::filesystem::remove_all(path.parent_path());
  }
}
