// The backend ops behind Transformer-XL and ACT (core/variants/transformer_xl/xl_attention_op.h):
// the host references against values worked out by hand (ACT) and a scalar loop over the paper's
// four terms (XL), and the Backend defaults for slicing and stacking rows. Device kernels are
// tested against these references in tests/gpu/.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/tensor/error.h"
#include "core/tensor/random.h"
#include "core/variants/transformer_xl/xl_attention_op.h"
#include "core/variants/universal/act_step.h"
#include "tests/core/random_tensor.h"

using namespace atlas;
using atlas::test::random_tensor;

namespace {

Tensor with_values(Shape shape, std::initializer_list<float> values) {
  Tensor t(std::move(shape));
  std::copy(values.begin(), values.end(), t.data.begin());
  return t;
}

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

}  // namespace

TEST_CASE("act_step: halting by threshold, continuing, and already halted, by hand", "[act][ops]") {
  // Position 0 has cum 0.5 and h = sigmoid(2) = 0.881: 0.5 + 0.881 >= 0.99, so it halts with
  // weight R = 1 - 0.5. Position 1 has cum 0.2 and h = sigmoid(-1) = 0.269: it continues with
  // weight h. Position 2 halted at an earlier step: nothing of it changes.
  const Tensor halting = with_values({3, 4}, {0.5f, 0, 1, 0, 0.2f, 0, 1, 0, 1, 0.3f, 2, 1});
  const Tensor y = with_values({3, 2}, {1, 2, 3, 4, 5, 6});
  const Tensor state = with_values({3, 2}, {7, 8, 9, 10, 11, 12});
  const Tensor logit = with_values({3, 1}, {2, -1, 5});
  const Tensor t = with_values({3, 2}, {10, 20, 30, 40, 50, 60});
  ActStepArgs args;
  args.threshold = 0.99f;
  const float h1 = sigmoid(-1.0f);

  const ActStepHost r = act_step_reference(halting, y, state, logit, t, args);
  CHECK(r.halting.data == std::vector<float>{1, 0.5f, 2, 1, 0.2f + h1, 0, 2, 0, 1, 0.3f, 2, 1});
  CHECK(r.weights.data == std::vector<float>{sigmoid(2.0f), 0.5f, h1, h1, 0, 0});
  CHECK(r.y.data[0] == Approx(0.5f * 10 + 0.5f * 1));
  CHECK(r.y.data[1] == Approx(0.5f * 20 + 0.5f * 2));
  CHECK(r.y.data[2] == Approx(h1 * 30 + (1 - h1) * 3));
  CHECK(r.y.data[3] == Approx(h1 * 40 + (1 - h1) * 4));
  CHECK(r.y.data[4] == 5);
  CHECK(r.y.data[5] == 6);
  CHECK(r.state.data == std::vector<float>{10, 20, 30, 40, 11, 12});

  SECTION("accumulate mode adds w t") {
    args.interpolate = false;
    const ActStepHost a = act_step_reference(halting, y, state, logit, t, args);
    CHECK(a.y.data[0] == Approx(1 + 0.5f * 10));
    CHECK(a.y.data[3] == Approx(4 + h1 * 40));
    CHECK(a.y.data[5] == 6);
  }
  SECTION("the last step halts every running position with its remainder") {
    args.last_step = true;
    const ActStepHost l = act_step_reference(halting, y, state, logit, t, args);
    CHECK(l.halting.data[4] == 1);
    CHECK(l.halting.data[5] == Approx(0.8f));
    CHECK(l.halting.data[7] == 1);
    CHECK(l.weights.data[3] == Approx(0.8f));
  }
}

TEST_CASE("act_step rejects mismatched shapes by name", "[act][ops]") {
  const Tensor y({3, 2}), h({3, 4}), logit({3, 1});
  CHECK_THROWS_WITH(act_step_reference(Tensor({3, 3}), y, y, logit, y, {}), Catch::Contains("halting state"));
  CHECK_THROWS_WITH(act_step_reference(h, y, y, Tensor({2, 1}), y, {}), Catch::Contains("halting logits"));
  CHECK_THROWS_WITH(act_step_reference(h, y, y, logit, Tensor({3, 5}), {}), Catch::Contains("step output"));
}

TEST_CASE("xl_attention_reference equals a scalar loop over the four terms", "[xl][ops]") {
  Rng rng(3);
  struct Case {
    int64_t lq, mem, heads, dh, mem_len, clamp;
    bool same_length;
  };
  for (const Case c : {Case{3, 0, 1, 2, 0, -1, false}, Case{4, 3, 2, 3, 3, -1, false},
                       Case{5, 2, 3, 1, 2, 1, true}, Case{1, 6, 2, 4, 4, 2, true}}) {
    INFO("Lq " << c.lq << " memory " << c.mem << " heads " << c.heads << " clamp " << c.clamp);
    const int64_t lk = c.lq + c.mem, H = c.heads, dh = c.dh;
    const Tensor q = random_tensor(rng, {c.lq, H * dh}), k = random_tensor(rng, {lk, H * dh}),
                 v = random_tensor(rng, {lk, H * dh}), rk = random_tensor(rng, {lk, H * dh}),
                 u = random_tensor(rng, {H, dh}), vb = random_tensor(rng, {H, dh});
    XlAttentionArgs args;
    args.heads = int(H);
    args.scale = 0.7f;
    args.mem_len = c.mem_len;
    args.same_length = c.same_length;
    args.clamp_len = c.clamp;
    const XlAttentionHost r = xl_attention_reference(q, k, v, rk, u, vb, args);
    auto at = [](const Tensor& t, int64_t row, int64_t col) { return double(t.data[size_t(row * t.shape[1] + col)]); };
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < c.lq; ++i) {
        const int64_t pos = c.mem + i;
        std::vector<double> s(size_t(lk), -INFINITY);
        double mx = -INFINITY;
        for (int64_t j = 0; j <= pos; ++j) {
          if (c.same_length && j <= pos - c.mem_len) continue;
          const int64_t dist = c.clamp >= 0 ? std::min(pos - j, c.clamp) : pos - j;
          double a = 0, b = 0, cc = 0, d = 0;
          for (int64_t e = 0; e < dh; ++e) {
            a += at(q, i, h * dh + e) * at(k, j, h * dh + e);
            b += at(q, i, h * dh + e) * at(rk, dist, h * dh + e);
            cc += at(u, h, e) * at(k, j, h * dh + e);
            d += at(vb, h, e) * at(rk, dist, h * dh + e);
          }
          s[size_t(j)] = 0.7 * (a + b + cc + d);
          mx = std::max(mx, s[size_t(j)]);
          const size_t o = size_t((h * c.lq + i) * lk + j);
          CHECK(r.term_a.data[o] == Approx(0.7 * a).margin(1e-5));
          CHECK(r.term_d.data[o] == Approx(0.7 * d).margin(1e-5));
        }
        double sum = 0;
        for (double& x : s) sum += x = std::isinf(x) ? 0.0 : std::exp(x - mx);
        for (int64_t e = 0; e < dh; ++e) {
          double o = 0;
          for (int64_t j = 0; j < lk; ++j) o += s[size_t(j)] / sum * at(v, j, h * dh + e);
          CHECK(at(r.out, i, h * dh + e) == Approx(o).margin(1e-5));
        }
        for (int64_t j = 0; j < lk; ++j)
          CHECK(r.probs.data[size_t((h * c.lq + i) * lk + j)] == Approx(s[size_t(j)] / sum).margin(1e-6));
      }
  }
}

TEST_CASE("xl_attention rejects inconsistent shapes by name", "[xl][ops]") {
  const Tensor q({2, 4}), k({3, 4}), rk({3, 4}), u({2, 2});
  XlAttentionArgs args;
  args.heads = 2;
  CHECK_NOTHROW(xl_attention_reference(q, k, k, rk, u, u, args));
  CHECK_THROWS_WITH(xl_attention_reference(q, Tensor({1, 4}), Tensor({1, 4}), rk, u, u, args),
                    Catch::Contains("memory rows then the query rows"));
  CHECK_THROWS_WITH(xl_attention_reference(q, k, k, Tensor({2, 4}), u, u, args),
                    Catch::Contains("every distance up to 2"));
  CHECK_THROWS_WITH(xl_attention_reference(q, k, k, rk, Tensor({2, 3}), u, args),
                    Catch::Contains("u and v must be [heads, d_head]"));
}

TEST_CASE("slice_rows and concat_rows copy rows exactly", "[backend][ops]") {
  std::unique_ptr<Backend> be = make_cpu_backend();
  const Tensor a = with_values({2, 3}, {1, 2, 3, 4, 5, 6}), b = with_values({1, 3}, {7, 8, 9});
  const DTensor da = be->upload(a), db = be->upload(b);
  CHECK(be->download(be->concat_rows(da, db)).data == std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9});
  CHECK(be->download(be->concat_rows(be->upload(Tensor({0, 3})), db)).data == b.data);
  CHECK(be->download(be->slice_rows(da, 1, 1)).data == std::vector<float>{4, 5, 6});
  CHECK(be->slice_rows(da, 2, 0).shape == Shape{0, 3});
  CHECK_THROWS_WITH(be->slice_rows(da, 1, 2), Catch::Contains("not inside"));
  CHECK_THROWS_WITH(be->concat_rows(da, be->upload(Tensor({1, 2}))), Catch::Contains("same number of columns"));
}
