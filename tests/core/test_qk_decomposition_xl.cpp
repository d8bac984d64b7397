// The QK decomposition on Transformer-XL (core/analysis/qk_decomposition_xl.cpp) against
// independent oracles: the engine's traced pre-softmax scores and its traced terms (a)-(d) of
// each segment (the cells sum to them, the named rows and column to each term), the four terms
// computed by naive loops from the weights and the traced layer inputs (u, v, W_kR and the
// reference's sinusoid written out), a head whose W^O is zero contributing exactly nothing, keys
// in the memory, the value path against the head's output, and the refusals (GTrXL's gates, a
// key before the memory).
#include <catch2/catch.hpp>

#include <cmath>

#include "core/analysis/qk_decomposition.h"
#include "core/model/model.h"
#include "core/model/presets.h"
#include "core/tensor/error.h"
#include "tests/core/naive_xl.h"
#include "tests/core/random_prenorm_models.h"
#include "tests/core/token_lists.h"

using namespace atlas;
using atlas::test::tokens;
using Catch::Matchers::Contains;

namespace {

double xlqk_rel_err(double got, double want) { return std::fabs(got - want) / std::max(1.0, std::fabs(want)); }

std::vector<int> xlqk_ids(size_t n) {
  std::vector<int> ids;
  for (size_t k = 0; k < n; ++k) ids.push_back(int(32 + (k * 37 + 11) % 90));
  return ids;
}

size_t xlqk_index(const std::vector<std::string>& names, const std::string& name) {
  for (size_t k = 0; k < names.size(); ++k)
    if (names[k] == name) return k;
  FAIL("no component " << name);
  return 0;
}

// The sums of the cells per term: (a) content x content, (b) content x relative position,
// (c) the u row, (d) the v row's relative position cell (and nothing else in the u, v rows).
struct XlqkTerms {
  double a = 0, b = 0, c = 0, d = 0, u_rel = 0, v_content = 0;
};

XlqkTerms xlqk_terms(const QkDecomposition& r) {
  const size_t u = xlqk_index(r.rows, "xl.u (global content bias)"), v = xlqk_index(r.rows, "xl.v (global position bias)");
  const size_t rel = xlqk_index(r.columns, "xl.relative_position");
  REQUIRE(u == r.rows.size() - 2);
  REQUIRE(v == r.rows.size() - 1);
  REQUIRE(rel == r.columns.size() - 1);
  XlqkTerms t;
  for (size_t x = 0; x < u; ++x)
    for (size_t y = 0; y < rel; ++y) t.a += r.cell(x, y);
  for (size_t x = 0; x < u; ++x) t.b += r.cell(x, rel);
  for (size_t y = 0; y < rel; ++y) t.c += r.cell(u, y);
  for (size_t y = 0; y < rel; ++y) t.v_content += std::fabs(r.cell(v, y));
  t.u_rel = r.cell(u, rel);
  t.d = r.cell(v, rel);
  return t;
}

// Every head of `layers` at the (query, key) cells: the cells sum to the traced score, each term
// to the engine's traced term of that segment, the value parts to the head's output.
void xlqk_check(const Model& m, const std::vector<TokenInfo>& src, const std::vector<std::pair<int64_t, int64_t>>& cells,
                double tol = 1e-4) {
  const ModelConfig& c = m.config();
  RunOptions o;
  o.trace = TraceOptions::none();
  o.trace.scores = true;
  const RunResult run = m.forward(src, {}, o);
  const int64_t S = c.xl()->segment_length, L = int64_t(src.size());
  for (int64_t l = 0; l < c.n_layers; ++l)
    for (int64_t h = 0; h < c.n_heads; ++h)
      for (auto [i, j] : cells) {
        INFO("layer " << l << " head " << h << " query " << i << " key " << j);
        const QkDecomposition r = qk_decomposition(m, src, {l, h, i, j, true});
        CHECK(xlqk_rel_err(r.total, r.score) < tol);
        const int64_t seg = i / S, start = seg * S, lq = std::min(S, L - start);
        const int64_t first = start - std::min(c.xl()->mem_len, start), lk = i / S * S + lq - first;
        CHECK(r.segment == seg);
        CHECK(r.key_in_memory == (j < start));
        const XlqkTerms t = xlqk_terms(r);
        CHECK(t.u_rel == 0.0);
        CHECK(t.v_content == 0.0);
        const double got[4] = {t.a, t.b, t.c, t.d};
        for (int k = 0; k < 4; ++k) {
          const std::string name = "xl.seg" + std::to_string(seg) + ".layer" + std::to_string(l) + ".terms." + "abcd"[k];
          const TracedArray* a = run.trace.find(name);
          REQUIRE(a);
          REQUIRE(a->tensor.shape == Shape{c.n_heads, lq, lk});
          INFO("term " << "abcd"[k]);
          CHECK(xlqk_rel_err(got[k], a->tensor.data[size_t((h * lq + (i - start)) * lk + (j - first))]) < tol);
        }
        const size_t d = size_t(c.d_model), n = r.value_names.size();
        REQUIRE(n == r.columns.size() - 1);
        REQUIRE(r.value_parts.size() == n * d);
        for (size_t k = 0; k < d; ++k) {
          double s = 0;
          for (size_t a = 0; a < n; ++a) s += r.value_parts[a * d + k];
          CHECK(s == Approx(r.head_output[k]).epsilon(tol).margin(tol));
        }
      }
}

}  // namespace

TEST_CASE("QK decomposition XL: the post-norm tiny-xl preset sums to its scores and terms, keys in the memory too",
          "[qk][xl]") {
  const ModelConfig c = preset_config("tiny-xl");  // post-norm, segments of 16, 16 memory rows
  REQUIRE(c.norm_position == NormPosition::Post);
  const Model m(c, test::random_all_params(c, 3));
  const std::vector<TokenInfo> src = tokens(xlqk_ids(40));  // segments 0-15, 16-31, 32-39
  xlqk_check(m, src, {{39, 39}, {39, 20}, {39, 17}, {20, 5}, {31, 16}, {7, 0}, {33, 25}});
}

TEST_CASE("QK decomposition XL: pre-norm and post-norm, short memory and same_length, sum to the scores", "[qk][xl]") {
  for (NormPosition np : {NormPosition::Pre, NormPosition::Post}) {
    ModelConfig c = naive::xl_test_config(np, 4, 3);  // a query sees up to 3 keys of the memory
    c.xl()->same_length = np == NormPosition::Pre;
    INFO((np == NormPosition::Pre ? "pre-norm, same_length" : "post-norm"));
    const Model m(c, test::random_all_params(c, 11));
    xlqk_check(m, tokens(xlqk_ids(11)), {{10, 8}, {10, 9}, {9, 7}, {5, 3}, {4, 4}, {3, 2}});
  }
}

TEST_CASE("QK decomposition XL: the four terms equal naive loops over the weights and the traced layer inputs",
          "[qk][xl]") {
  for (NormPosition np : {NormPosition::Post, NormPosition::Pre}) {
    ModelConfig c = naive::xl_test_config(np, 4, 4);
    c.xl()->clamp_len = 5;  // distances above 5 read R_5, as the reference clamps them
    const ParamStore p = test::random_all_params(c, 21);
    const Model m(c, p);
    const std::vector<int> ids = xlqk_ids(12);
    RunOptions o;
    o.trace = TraceOptions::none();
    o.trace.hidden = true;
    const RunResult run = m.forward(tokens(ids), {}, o);
    const size_t d = size_t(c.d_model), H = size_t(c.n_heads), dh = d / H;
    for (int64_t l = 0; l < c.n_layers; ++l) {
      // x_l of every position: the scaled token rows, or the traced outputs of layer l - 1.
      naive::Matrix x = naive::zeros(ids.size(), d);
      for (size_t q = 0; q < ids.size(); ++q)
        for (size_t k = 0; k < d; ++k)
          x[q][k] = l == 0 ? naive::P(p, "embed.tokens").data[size_t(ids[q]) * d + k]
                           : run.trace.find("decoder.seg" + std::to_string(q / 4) + ".layer" + std::to_string(l - 1) + ".hidden")
                                 ->tensor.data[(q % 4) * d + k];
      const std::string pre = "decoder.layer" + std::to_string(l), a = pre + ".self_attn";
      if (np == NormPosition::Pre) x = naive::norm(x, c, p, pre + ".self_attn_norm");
      auto bias = [&](const std::string& n) { return naive::has(p, n) ? &naive::P(p, n) : nullptr; };
      const naive::Matrix q = naive::linear(x, naive::P(p, a + ".wq"), bias(a + ".bq"));
      const naive::Matrix k = naive::linear(x, naive::P(p, a + ".wk"), bias(a + ".bk"));
      for (size_t h = 0; h < H; ++h)
        for (auto [i, j] : {std::pair<size_t, size_t>{11, 4}, {11, 9}, {7, 0}, {6, 6}, {3, 1}}) {
          INFO((np == NormPosition::Pre ? "pre" : "post") << " layer " << l << " head " << h << " query " << i << " key " << j);
          const int64_t dist = std::min<int64_t>(int64_t(i - j), 5);
          const naive::Matrix rk = naive::linear({naive::xl_rel_sinusoid(dist, d)}, naive::P(p, a + ".wr"), nullptr);
          double ta = 0, tb = 0, tc = 0, td = 0;
          for (size_t t = 0; t < dh; ++t) {
            const size_t col = h * dh + t;
            ta += q[i][col] * k[j][col];
            tb += q[i][col] * rk[0][col];
            tc += naive::P(p, "xl.u").data[col] * k[j][col];
            td += naive::P(p, "xl.v").data[col] * rk[0][col];
          }
          const double s = 1.0 / std::sqrt(double(dh));
          const QkDecomposition r = qk_decomposition(m, tokens(ids), {l, int64_t(h), int64_t(i), int64_t(j), false});
          const XlqkTerms t = xlqk_terms(r);
          CHECK(xlqk_rel_err(t.a, s * ta) < 1e-4);
          CHECK(xlqk_rel_err(t.b, s * tb) < 1e-4);
          CHECK(xlqk_rel_err(t.c, s * tc) < 1e-4);
          CHECK(xlqk_rel_err(t.d, s * td) < 1e-4);
          CHECK(xlqk_rel_err(r.score, s * (ta + tb + tc + td)) < 1e-4);
        }
    }
  }
}

TEST_CASE("QK decomposition XL: components are named per layer, and a head with a zero W^O contributes nothing",
          "[qk][xl]") {
  ModelConfig c = naive::xl_test_config(NormPosition::Post, 4, 4);
  ParamStore p = test::random_all_params(c, 5);
  Tensor& wo = p.at("decoder.layer0.self_attn.wo");  // [d, H*dh]: head 1's columns to zero
  const int64_t d = c.d_model, dh = c.d_head();
  for (int64_t k = 0; k < d; ++k)
    for (int64_t m = dh; m < 2 * dh; ++m) wo.data[size_t(k * d + m)] = 0.0f;
  const Model m(c, p);
  const QkDecomposition r = qk_decomposition(m, tokens(xlqk_ids(9)), {1, 0, 8, 5, true});  // key 5: memory of segment 2
  CHECK(r.key_in_memory);
  const std::vector<std::string> content = {"embed.tokens", "layer0.head0", "layer0.head1", "layer0.attn_bias"};
  for (size_t k = 0; k < content.size(); ++k) CHECK(r.rows[k] == content[k]);
  CHECK(r.rows.back() == "xl.v (global position bias)");
  CHECK(r.columns.back() == "xl.relative_position");
  for (const char* name : {"layer0.self_attn_norm.beta", "layer0.mlp", "layer0.ffn_norm.beta", "bias"})
    CHECK(xlqk_index(r.columns, name) < r.columns.size());
  const size_t dead = xlqk_index(r.rows, "layer0.head1");
  for (size_t y = 0; y < r.columns.size(); ++y) CHECK(r.cell(dead, y) == 0.0);
  for (size_t x = 0; x < r.rows.size(); ++x) CHECK(r.cell(x, dead) == 0.0);
  CHECK(xlqk_rel_err(r.total, r.score) < 1e-4);
  const QkDecomposition first = qk_decomposition(m, tokens(xlqk_ids(9)), {0, 1, 5, 5, false});
  CHECK(first.rows == std::vector<std::string>{"embed.tokens", "bias", "xl.u (global content bias)",
                                               "xl.v (global position bias)"});
}

// The post-norm walk, by hand: a component of layer 1's input is LN2(LN1(part)) with both norms
// frozen at divisors recomputed here from the naive whole-text XL (its heads, its feed-forward), so
// its cell against the other side's `bias` (b_q or b_k alone) checks sigma1 and sigma2, which the
// sums cannot (the MLP remainder would absorb a wrong divisor).
TEST_CASE("QK decomposition XL: post-norm components are the parts through both norms frozen at naive divisors",
          "[qk][xl]") {
  const ModelConfig c = naive::xl_test_config(NormPosition::Post, 4, 8);  // memory covers the whole text
  const ParamStore p = test::random_all_params(c, 31);
  const Model m(c, p);
  const std::vector<int> ids = xlqk_ids(10);
  const naive::XlRun run = naive::xl_whole_text(c, p, ids);
  const size_t d = size_t(c.d_model), dh = size_t(c.d_head());
  const std::string a0 = "decoder.layer0.self_attn", a1 = "decoder.layer1.self_attn";
  auto centred_sigma = [&](std::vector<double> x, double& sigma) {  // x - mean, and sigma of x
    double mean = 0, var = 0;
    for (double v : x) mean += v;
    mean /= double(d);
    for (double& v : x) var += (v - mean) * (v - mean), v -= mean;
    sigma = std::sqrt(var / double(d) + c.norm_eps);
    return x;
  };
  // The part's vector in layer 1's input at position q: through LN1 (unless it is LN1's beta,
  // which joins after it) and LN2, frozen at q's divisors.
  auto through_norms = [&](size_t q, std::vector<double> part, bool after_ln1 = false) {
    std::vector<double> x(d), z(d);
    for (size_t k = 0; k < d; ++k) x[k] = naive::P(p, "embed.tokens").data[size_t(ids[q]) * d + k];
    const naive::Matrix att = naive::linear({run.heads[0][q]}, naive::P(p, a0 + ".wo"), &naive::P(p, a0 + ".bo"));
    for (size_t k = 0; k < d; ++k) z[k] = x[k] + att[0][k];
    double s1 = 0, s2 = 0;
    centred_sigma(z, s1);
    const naive::Matrix y = naive::norm({z}, c, p, "decoder.layer0.self_attn_norm");
    const naive::Matrix f = naive::ffn(y, c, p, "decoder.layer0.ffn");
    std::vector<double> w(d);
    for (size_t k = 0; k < d; ++k) w[k] = y[0][k] + f[0][k];
    centred_sigma(w, s2);
    double unused = 0;  // a part's own sigma: the frozen maps divide by the stream's
    if (!after_ln1) {
      part = centred_sigma(part, unused);
      for (size_t k = 0; k < d; ++k) part[k] *= naive::P(p, "decoder.layer0.self_attn_norm.gamma").data[k] / s1;
    }
    part = centred_sigma(part, unused);
    for (size_t k = 0; k < d; ++k) part[k] *= naive::P(p, "decoder.layer0.ffn_norm.gamma").data[k] / s2;
    return part;
  };
  auto head_part = [&](size_t q, size_t h) {  // W^O_h o_h(q)
    std::vector<double> o(d, 0.0);
    for (size_t t = h * dh; t < (h + 1) * dh; ++t) o[t] = run.heads[0][q][t];
    return naive::linear({o}, naive::P(p, a0 + ".wo"), nullptr)[0];
  };
  // scale * (W_x^h part) . b_y^h
  auto cell_with_bias = [&](const std::string& w, const std::string& b, size_t h, const std::vector<double>& part) {
    const naive::Matrix proj = naive::linear({part}, naive::P(p, a1 + w), nullptr);
    double dot = 0;
    for (size_t t = h * dh; t < (h + 1) * dh; ++t) dot += proj[0][t] * naive::P(p, a1 + b).data[t];
    return dot / std::sqrt(double(dh));
  };
  for (size_t h = 0; h < 2; ++h)
    for (auto [i, j] : {std::pair<size_t, size_t>{9, 2}, {6, 5}}) {  // key 2: in segment 2's memory
      INFO("head " << h << " query " << i << " key " << j);
      const QkDecomposition r = qk_decomposition(m, tokens(ids), {1, int64_t(h), int64_t(i), int64_t(j), false});
      const size_t bias = xlqk_index(r.columns, "bias");
      std::vector<double> embed_i(d), embed_j(d);
      for (size_t k = 0; k < d; ++k) {
        embed_i[k] = naive::P(p, "embed.tokens").data[size_t(ids[i]) * d + k];
        embed_j[k] = naive::P(p, "embed.tokens").data[size_t(ids[j]) * d + k];
      }
      const std::vector<double> beta1(naive::P(p, "decoder.layer0.self_attn_norm.beta").data.begin(),
                                      naive::P(p, "decoder.layer0.self_attn_norm.beta").data.end());
      CHECK(xlqk_rel_err(r.cell(xlqk_index(r.rows, "embed.tokens"), bias),
                         cell_with_bias(".wq", ".bk", h, through_norms(i, embed_i))) < 1e-4);
      CHECK(xlqk_rel_err(r.cell(xlqk_index(r.rows, "layer0.head1"), bias),
                         cell_with_bias(".wq", ".bk", h, through_norms(i, head_part(i, 1)))) < 1e-4);
      CHECK(xlqk_rel_err(r.cell(bias, xlqk_index(r.columns, "embed.tokens")),
                         cell_with_bias(".wk", ".bq", h, through_norms(j, embed_j))) < 1e-4);
      CHECK(xlqk_rel_err(r.cell(bias, xlqk_index(r.columns, "layer0.head0")),
                         cell_with_bias(".wk", ".bq", h, through_norms(j, head_part(j, 0)))) < 1e-4);
      CHECK(xlqk_rel_err(r.cell(bias, xlqk_index(r.columns, "layer0.self_attn_norm.beta")),
                         cell_with_bias(".wk", ".bq", h, through_norms(j, beta1, true))) < 1e-4);
    }
}

TEST_CASE("QK decomposition XL: GTrXL is refused for its gates; a key before the memory and a masked key are refused",
          "[qk][xl]") {
  CHECK_THAT(qk_decomposition_refusal(preset_config("tiny-gtrxl")),
             Contains("GTrXL's gates") && Contains("not a linear sum") && Contains("supported: pre-norm"));
  CHECK(qk_decomposition_refusal(preset_config("tiny-xl")).empty());
  CHECK(qk_decomposition_refusal(preset_config("transformer-xl-base")).empty());
  ModelConfig c = naive::xl_test_config(NormPosition::Post, 4, 2);
  const Model m(c, test::random_all_params(c, 2));
  const auto src = tokens(xlqk_ids(10));
  CHECK_THROWS_WITH(qk_decomposition(m, src, {0, 0, 9, 3, false}),
                    Contains("key 3 is before the keys query 9 sees") && Contains("memory holds 2 earlier tokens") &&
                        Contains("keys are tokens 6 to 9"));
  CHECK_THROWS_WITH(qk_decomposition(m, src, {0, 0, 5, 6, false}), Contains("key 6 is after query 5"));
  c.xl()->same_length = true;  // query 9 keeps its last mem_len = 2 keys, 8 and 9
  const Model same(c, test::random_all_params(c, 2));
  CHECK_THROWS_WITH(qk_decomposition(same, src, {0, 0, 9, 6, false}), Contains("the mask forbids key 6 for query 9"));
}
