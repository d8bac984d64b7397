// Sparse attention against dense masked softmax attention computed naively, the
// "sparse" config section's validation, and the model path with its traced CSR arrays.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <memory>
#include <random>

#include "core/backend/backend.h"
#include "core/config/config.h"
#include "core/tensor/error.h"
#include "core/model/model.h"
#include "core/model/params.h"
#include "core/model/presets.h"
#include "core/model/array_name_parts.h"
#include "core/variants/sparse/sparse_attention.h"
#include "tests/core/config_error.h"

using namespace atlas;

namespace {

Tensor random_tensor(Shape s, std::mt19937& g) {
  Tensor t(s);
  std::normal_distribution<float> n(0.0f, 1.0f);
  for (auto& x : t.data) x = n(g);
  return t;
}

// Dense masked softmax per head with plain loops: allowed(h, i, j) decides the mask.
Tensor naive_attention(const Tensor& q, const Tensor& k, const Tensor& v, int64_t H, float scale,
                       const std::function<bool(int64_t, int64_t, int64_t)>& allowed) {
  const int64_t L = q.shape[0], dk = q.shape[1] / H, dv = v.shape[1] / H;
  Tensor out({L, H * dv});
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < L; ++i) {
      std::vector<double> s(size_t(L), -INFINITY);
      double mx = -INFINITY;
      for (int64_t j = 0; j < L; ++j) {
        if (!allowed(h, i, j)) continue;
        double d = 0;
        for (int64_t t = 0; t < dk; ++t) d += double(q.data[size_t(i * H * dk + h * dk + t)]) * k.data[size_t(j * H * dk + h * dk + t)];
        s[size_t(j)] = d * scale;
        mx = std::max(mx, s[size_t(j)]);
      }
      if (mx == -INFINITY) continue;
      double z = 0;
      for (auto& x : s) z += (x = std::exp(x - mx));
      for (int64_t j = 0; j < L; ++j)
        for (int64_t t = 0; t < dv; ++t)
          out.data[size_t(i * H * dv + h * dv + t)] += float(s[size_t(j)] / z * v.data[size_t(j * H * dv + h * dv + t)]);
    }
  return out;
}

}  // namespace

TEST_CASE("sparse attention equals dense masked softmax attention", "[sparse]") {
  std::mt19937 g(3);
  const int64_t L = 37, H = 4, dk = 5;
  Tensor q = random_tensor({L, H * dk}, g), k = random_tensor({L, H * dk}, g),
         v = random_tensor({L, H * dk}, g);
  SparseConfig s;
  s.pattern = SparsePattern::Fixed;
  s.block = 8;
  s.summary = 2;
  s.per_head_summary = true;
  s.combine = SparseCombine::PerHead;
  AttentionMask mask;
  mask.causal = true;
  mask.key_valid.assign(size_t(L), 1);
  mask.key_valid[3] = 0;  // padding also applies inside the pattern
  auto heads = layer_patterns(s, L, 0, H, mask);
  std::vector<std::vector<float>> probs;
  Tensor got = sparse_attention(q, k, v, int(H), 0.5f, heads, &probs);
  Tensor want = naive_attention(q, k, v, H, 0.5f, [&](int64_t h, int64_t i, int64_t j) {
    if (j > i || j == 3) return false;
    const int64_t l = 8, c = 2, off = (h * c) % l;
    return h % 2 == 0 ? j / l == i / l : ((j + off) % l) >= l - c;
  });
  REQUIRE(got.shape == want.shape);
  for (size_t n = 0; n < got.data.size(); ++n) REQUIRE(got.data[n] == Approx(want.data[n]).margin(1e-5));
  for (int64_t h = 0; h < H; ++h)  // each non-empty row is a distribution
    for (int64_t i = 0; i < L; ++i) {
      const auto& p = heads[size_t(h)];
      double sum = 0;
      for (int64_t n = p.indptr[size_t(i)]; n < p.indptr[size_t(i) + 1]; ++n) sum += probs[size_t(h)][size_t(n)];
      if (p.indptr[size_t(i)] != p.indptr[size_t(i) + 1]) REQUIRE(sum == Approx(1.0).epsilon(1e-5));
    }
}

namespace {
using test::config_error_of;
}  // namespace

TEST_CASE("sparse config: bad values are rejected naming the key; round trip", "[sparse][config]") {
  CHECK_THAT(config_error_of(R"({"sparse": {"pattern": "strided", "stride": 0}})"), Catch::Contains("sparse.stride"));
  CHECK_THAT(config_error_of(R"({"sparse": {"pattern": "fixed", "block": 8, "summary": 9}})"),
             Catch::Contains("sparse.summary") && Catch::Contains("sparse.block"));
  CHECK_THAT(config_error_of(R"({"sparse": {"pattern": "fixed", "block": 0}})"), Catch::Contains("sparse.block"));
  CHECK_THAT(config_error_of(R"({"sparse": {"pattern": "stripes"}})"), Catch::Contains("sparse.pattern"));
  CHECK_THAT(config_error_of(R"({"sparse": {"pattern": "fixed", "sumary": 4}})"),
             Catch::Contains("sumary") && Catch::Contains("summary"));
  CHECK_THAT(config_error_of(R"({"sparse": {"pattern": "local2d", "query_shape": [4]}})"),
             Catch::Contains("sparse.query_shape"));
  CHECK_THAT(config_error_of(R"({"sparse": {"pattern": "local2d", "flange": [-1, 2]}})"),
             Catch::Contains("sparse.flange[0]"));
  CHECK_THAT(config_error_of(R"({"sparse": {"pattern": "local1d", "block_length": 0}})"),
             Catch::Contains("sparse.block_length"));
  CHECK_THAT(config_error_of(R"({"sparse": 3})"), Catch::Contains("sparse must be an object"));
  CHECK(config_error_of(R"({"sparse": {"pattern": "strided", "stride": "auto"}})").empty());

  ModelConfig c = parse_config(
      R"({"sparse": {"pattern": "local2d", "query_shape": [4, 8], "flange": [2, 3], "image_width": 64,
          "combine": "interleave", "summary_offsets": "per_head", "stride": 7}})", "t.json");
  ModelConfig d = parse_config(config_to_json(c), "again");
  CHECK(d.sparse()->pattern == SparsePattern::Local2D);
  CHECK(d.sparse()->query_h == 4);
  CHECK(d.sparse()->query_w == 8);
  CHECK(d.sparse()->flange_h == 2);
  CHECK(d.sparse()->flange_w == 3);
  CHECK(d.sparse()->image_width == 64);
  CHECK(d.sparse()->combine == SparseCombine::Interleave);
  CHECK(d.sparse()->per_head_summary);
  CHECK(d.sparse()->stride == 7);
  CHECK(config_to_json(d) == config_to_json(c));
}

TEST_CASE("layer index parsed from dump-scheme prefixes", "[sparse]") {
  CHECK(layer_index_of("decoder.layer12.self_attn") == 12);
  CHECK(layer_index_of("encoder.layer0.attn") == 0);
  CHECK(layer_index_of("attn") == 0);
}

TEST_CASE("a pattern covering every key gives the dense model's output", "[sparse][model]") {
  // Unmasked local 1D with one block longer than the input is full attention; the dense
  // path (the CPU backend) is an independent implementation of the same maths.
  ModelConfig dense = preset_config("tiny-local1d-unmasked");
  dense.attention_kind = SoftmaxAttention{};
  ModelConfig sparse = preset_config("tiny-local1d-unmasked");
  sparse.sparse()->block_length = 64;
  ParamStore params = init_params(dense, 9);
  Model a(dense, params), b(sparse, params);
  RunResult ra = a.run("sparse and dense agree here", "", RunOptions{});
  RunResult rb = b.run("sparse and dense agree here", "", RunOptions{});
  REQUIRE(ra.output.shape == rb.output.shape);
  for (size_t n = 0; n < ra.output.data.size(); ++n)
    REQUIRE(rb.output.data[n] == Approx(ra.output.data[n]).margin(2e-4));
}

TEST_CASE("sparse model run traces CSR arrays consistent with the dense probabilities", "[sparse][model]") {
  ModelConfig c = preset_config("tiny-sparse-fixed");
  Model m(c, init_params(c, 4));
  const std::string text = "a longer input so that several blocks of sixteen appear here";
  RunResult r = m.run(text, "", RunOptions{});
  const std::string name = "decoder.layer1.self_attn";
  const auto* indptr = r.trace.find(name + ".indptr");
  const auto* indices = r.trace.find(name + ".indices");
  const auto* values = r.trace.find(name + ".values");
  const auto* allowed = r.trace.find(name + ".allowed");
  const auto* dense = r.trace.find(name);
  const auto* mask = r.trace.find(name + ".mask");
  REQUIRE(indptr);
  REQUIRE(indices);
  REQUIRE(values);
  REQUIRE(allowed);
  REQUIRE(dense);
  REQUIRE(mask);
  const int64_t L = int64_t(text.size()), H = c.n_heads, nnz = indices->tensor.numel();
  REQUIRE(indptr->tensor.numel() == L + 1);
  REQUIRE(values->tensor.shape == Shape{H, nnz});
  REQUIRE(dense->tensor.shape == Shape{H, L, L});
  // Every nonzero of the CSR, head by head, equals the dense entry; everything else is 0.
  std::vector<float> rebuilt(size_t(H * L * L), 0.0f);
  for (int64_t i = 0; i < L; ++i)
    for (int64_t n = int64_t(indptr->tensor.data[size_t(i)]); n < int64_t(indptr->tensor.data[size_t(i) + 1]); ++n) {
      const int64_t j = int64_t(indices->tensor.data[size_t(n)]);
      REQUIRE(j <= i);  // causal
      REQUIRE(mask->tensor.data[size_t(i * L + j)] == 1.0f);
      for (int64_t h = 0; h < H; ++h) rebuilt[size_t((h * L + i) * L + j)] = values->tensor.data[size_t(h * nnz + n)];
    }
  for (size_t n = 0; n < rebuilt.size(); ++n) REQUIRE(rebuilt[n] == dense->tensor.data[n]);
  // Rows are distributions per head; tiny-sparse-fixed uses the union in every head.
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < L; ++i) {
      double s = 0;
      for (int64_t j = 0; j < L; ++j) s += dense->tensor.data[size_t((h * L + i) * L + j)];
      REQUIRE(s == Approx(1.0).epsilon(1e-5));
    }
  // Query 40 (block 2 of 16) with per-head offsets: head 0's summary columns are 12..15 and
  // 28..31 of the earlier blocks, the own block is 32..40.
  const int64_t i = 40;
  auto allowed_at = [&](int64_t h, int64_t j) {
    for (int64_t n = int64_t(indptr->tensor.data[size_t(i)]); n < int64_t(indptr->tensor.data[size_t(i) + 1]); ++n)
      if (int64_t(indices->tensor.data[size_t(n)]) == j) return allowed->tensor.data[size_t(h * nnz + n)] == 1.0f;
    return false;
  };
  CHECK(allowed_at(0, 12));
  CHECK(allowed_at(0, 33));
  CHECK_FALSE(allowed_at(0, 8));
  CHECK(allowed_at(1, 8));  // head 1: offset 4 -> columns 8..11
  CHECK_FALSE(allowed_at(1, 12));
}

TEST_CASE("the sparse_attention op refuses malformed patterns on every backend's path",
          "[sparse][op]") {
  // The op's shared check runs before any backend sees the call; each refusal names what is wrong.
  const std::unique_ptr<Backend> be = make_cpu_backend();
  Tensor q({3, 4}), k({3, 4}), v({3, 4});
  CsrPattern p;
  p.rows = p.cols = 3;
  p.indptr = {0, 1, 2, 3};
  p.indices = {0, 1, 2};
  const auto run = [&](const std::vector<CsrPattern>& heads) {
    return sparse_attention(*be, be->upload(q), be->upload(k), be->upload(v),
                            static_cast<int>(heads.size()), 0.5f, heads, true);
  };
  const SparseAttentionResult ok = run({p});  // the well-formed pattern runs
  CHECK(be->download(ok.probs).data == std::vector<float>{1, 1, 1});
  CsrPattern backwards = p;
  backwards.indptr = {0, 2, 1, 3};
  CHECK_THROWS_WITH(run({backwards}), Catch::Contains("row pointers do not run from 0"));
  CsrPattern short_rows = p;
  short_rows.indptr = {0, 1, 3};
  CHECK_THROWS_WITH(run({short_rows}), Catch::Contains("pattern is 3x3"));
  CHECK_THROWS_WITH(run({p, p, p}), Catch::Contains("do not fit 3 heads"));  // width 4
}
