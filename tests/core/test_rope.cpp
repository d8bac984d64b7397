// Rotary position embedding (core/variants/rotary/) against independent oracles: rotations and
// frequencies worked by hand, the relative-position property of RoFormer eq. 16 (q'_m . k'_n
// depends only on m - n), the naive double-precision Transformer with RoPE written as complex
// multiplication (naive_transformer.h), central finite differences of the training op, and the
// config's field table (parse, write, ranges, "did you mean", combinations).
#include <catch2/catch.hpp>

#include <cmath>

#include "core/config/config.h"
#include "core/model/model.h"
#include "core/model/presets.h"
#include "core/model/qk_positions.h"
#include "core/model/trace.h"
#include "core/tensor/error.h"
#include "core/tensor/random.h"
#include "core/variants/rotary/rope.h"
#include "core/variants/rotary/train_rope.h"
#include "tests/core/config_error.h"
#include "tests/core/finite_differences.h"
#include "tests/core/train_test_util.h"

using namespace atlas;
using atlas::test::parse;
using Catch::Matchers::Contains;

namespace {

ModelConfig rope_config(int64_t rotary_dims = 0) {
  ModelConfig c;
  c.d_model = 8;
  c.n_heads = 1;
  c.max_positions = 100;
  c.positional = Positional::Rotary;
  c.rope.rotary_dims = rotary_dims;
  return c;
}

// One table row [r] of angles given as (cos, sin) pairs, exactly.
Tensor table_row(std::initializer_list<std::pair<float, float>> cos_sin) {
  const int64_t half = static_cast<int64_t>(cos_sin.size());
  Tensor t({1, 2 * half});
  int64_t i = 0;
  for (auto [c, s] : cos_sin) {
    t.data[size_t(i)] = c;
    t.data[size_t(half + i)] = s;
    ++i;
  }
  return t;
}

Tensor row_tensor(std::initializer_list<float> values) {
  Tensor t({1, static_cast<int64_t>(values.size())});
  t.data.assign(values);
  return t;
}

double dot(const Tensor& a, int64_t ra, const Tensor& b, int64_t rb, int64_t begin, int64_t n) {
  double s = 0;
  for (int64_t t = 0; t < n; ++t)
    s += double(a.data[size_t(ra * a.shape[1] + begin + t)]) * b.data[size_t(rb * b.shape[1] + begin + t)];
  return s;
}

}  // namespace

TEST_CASE("rotations worked by hand: pairs (i, i + r/2), (2i, 2i + 1), partial dimensions", "[rope]") {
  const Tensor x = row_tensor({1, 2, 3, 4});
  const Tensor quarter_and_half = table_row({{0, 1}, {-1, 0}});  // 90 and 180 degrees
  RopeArgs a;
  a.heads = 1;
  a.rotary_dims = 4;
  SECTION("half: (x0, x2) turn 90 degrees, (x1, x3) 180") {
    CHECK(rope_reference(x, quarter_and_half, a).data == std::vector<float>{-3, -2, 1, -4});
  }
  SECTION("adjacent: (x0, x1) turn 90 degrees, (x2, x3) 180") {
    a.adjacent_pairs = true;
    CHECK(rope_reference(x, quarter_and_half, a).data == std::vector<float>{-2, 1, -3, -4});
  }
  SECTION("two rotated dimensions of four: the last two pass through") {
    a.rotary_dims = 2;
    CHECK(rope_reference(x, table_row({{0, 1}}), a).data == std::vector<float>{-2, 1, 3, 4});
  }
  SECTION("two heads rotate alike, each within its own dimensions") {
    a.heads = 2;
    a.rotary_dims = 2;
    CHECK(rope_reference(row_tensor({1, 2, 3, 4}), table_row({{0, 1}}), a).data ==
          std::vector<float>{-2, 1, -4, 3});
  }
  SECTION("shapes that do not fit are refused by name") {
    a.rotary_dims = 6;
    CHECK_THROWS_WITH(rope_reference(x, quarter_and_half, a), Contains("rope:"));
  }
}

TEST_CASE("frequencies worked by hand for every scaling", "[rope]") {
  SECTION("none: theta^(-2i/r)") {
    const auto w = rope_frequencies(rope_config(4), 10);
    REQUIRE(w.size() == 2);
    CHECK(w[0] == 1.0f);
    CHECK(w[1] == Approx(0.01).epsilon(1e-6));
  }
  SECTION("linear: divided by the factor") {
    ModelConfig c = rope_config(4);
    c.rope.scaling = RopeScaling::Linear;
    c.rope.factor = 2;
    const auto w = rope_frequencies(c, 10);
    CHECK(w[0] == 0.5f);
    CHECK(w[1] == Approx(0.005).epsilon(1e-6));
  }
  SECTION("dynamic NTK: theta grows only past the original context") {
    ModelConfig c = rope_config(4);
    c.rope.scaling = RopeScaling::Dynamic;
    c.rope.factor = 2;
    c.rope.original_max_positions = 8;
    CHECK(rope_frequencies(c, 8)[1] == Approx(0.01).epsilon(1e-6));
    // 16 positions: theta' = 10000 (2 * 16 / 8 - 1)^(4 / 2) = 90000, w_1 = 1 / 300
    const auto w = rope_frequencies(c, 16);
    CHECK(w[0] == 1.0f);
    CHECK(w[1] == Approx(1.0 / 300.0).epsilon(1e-6));
  }
  SECTION("llama3: long wavelengths divided, short kept, the middle interpolated") {
    ModelConfig c = rope_config(8);  // w = 1, 0.1, 0.01, 0.001: wavelengths 6.3, 63, 628, 6283
    c.rope.scaling = RopeScaling::Llama3;
    c.rope.factor = 8;
    c.rope.original_max_positions = 100;  // low-frequency wavelength 100, high 25
    c.rope.low_freq_factor = 1;
    c.rope.high_freq_factor = 4;
    const auto w = rope_frequencies(c, 10);
    REQUIRE(w.size() == 4);
    CHECK(w[0] == 1.0f);                                         // 6.3 < 25: kept
    CHECK(w[1] == Approx(0.02975352506846948).epsilon(1e-6));   // smooth = 0.19718
    CHECK(w[2] == Approx(0.01 / 8).epsilon(1e-6));               // 628 > 100: divided
    CHECK(w[3] == Approx(0.001 / 8).epsilon(1e-6));
  }
}

TEST_CASE("q'_m . k'_n depends on m and n only through m - n (RoFormer eq. 16)", "[rope]") {
  for (bool adjacent : {false, true}) {
    ModelConfig c = rope_config();
    c.n_heads = 2;
    c.rope.pairing = adjacent ? RopePairing::Adjacent : RopePairing::Half;
    const RopeArgs a = rope_args(c);
    const Tensor table = rope_table(rope_frequencies(c, 64), 0, 64);
    Rng rng(5);
    Tensor q({64, 8}), k({64, 8});
    for (int64_t i = 0; i < 8; ++i) {  // the same vectors at every position
      q.data[size_t(i)] = float(rng.normal());
      k.data[size_t(i)] = float(rng.normal());
    }
    for (int64_t p = 1; p < 64; ++p)
      for (int64_t i = 0; i < 8; ++i) {
        q.data[size_t(p * 8 + i)] = q.data[size_t(i)];
        k.data[size_t(p * 8 + i)] = k.data[size_t(i)];
      }
    const Tensor rq = rope_reference(q, table, a), rk = rope_reference(k, table, a);
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t shift : {1, 17, 40}) {
        INFO("adjacent " << adjacent << " head " << h << " shift " << shift);
        CHECK(dot(rq, 9 + shift, rk, 3 + shift, h * 4, 4) == Approx(dot(rq, 9, rk, 3, h * 4, 4)).margin(1e-5));
        CHECK(dot(rq, 3 + shift, rk, 9 + shift, h * 4, 4) == Approx(dot(rq, 3, rk, 9, h * 4, 4)).margin(1e-5));
      }
    // Norms are kept: a rotation.
    CHECK(dot(rq, 50, rq, 50, 0, 8) == Approx(dot(q, 50, q, 50, 0, 8)).epsilon(1e-5));
  }
}

TEST_CASE("the rotation table holds cos then sin of p w_i", "[rope]") {
  const Tensor t = rope_table({1.0f, 0.25f}, 3, 2);  // positions 3 and 4
  REQUIRE(t.shape == Shape{2, 4});
  CHECK(t.data[0] == Approx(std::cos(3.0)));
  CHECK(t.data[1] == Approx(std::cos(0.75)));
  CHECK(t.data[2] == Approx(std::sin(3.0)));
  CHECK(t.data[7] == Approx(std::sin(1.0)));
}

TEST_CASE("the rope section: parse, write, ranges, did-you-mean and combinations", "[rope][config]") {
  const ModelConfig c = parse(R"({"positional": "rotary", "d_model": 64, "n_heads": 4,
      "rope": {"theta": 500000, "rotary_dims": 8, "pairing": "adjacent", "scaling": "llama3",
               "factor": 8, "original_max_positions": 8192, "low_freq_factor": 1,
               "high_freq_factor": 4}})");
  CHECK(c.positional == Positional::Rotary);
  CHECK(c.rope.theta == 500000.0f);
  CHECK(c.rope.rotary_dims == 8);
  CHECK(c.rope.pairing == RopePairing::Adjacent);
  CHECK(c.rope.scaling == RopeScaling::Llama3);
  CHECK(c.rope.original_max_positions == 8192);
  const ModelConfig back = parse(config_to_json(c));
  CHECK(back.rope.theta == c.rope.theta);
  CHECK(back.rope.pairing == c.rope.pairing);
  CHECK(back.rope.scaling == c.rope.scaling);
  CHECK(back.rope.factor == c.rope.factor);
  CHECK(config_to_json(back) == config_to_json(c));
  CHECK(parse("{}").rope.theta == 10000.0f);  // files without the section keep the defaults

  CHECK_THROWS_WITH(parse(R"({"rope": {"thetaa": 10}})"),
                    Contains("unknown rope key \"thetaa\"") && Contains("did you mean \"theta\""));
  CHECK_THROWS_WITH(parse(R"({"rope": {"theta": 0.5}})"), Contains("rope.theta must be in"));
  CHECK_THROWS_WITH(parse(R"({"rope": {"pairing": "interleaved"}})"),
                    Contains("rope.pairing must be one of") && Contains("\"adjacent\""));
  CHECK_THROWS_WITH(parse(R"({"rope": {"rotary_dims": -2}})"), Contains("rope.rotary_dims"));
  CHECK_THROWS_WITH(parse(R"({"positional": "rotary", "d_model": 16, "n_heads": 2,
                              "rope": {"rotary_dims": 3}})"),
                    Contains("rope.rotary_dims must be even and at most d_head (8), got 3"));
  CHECK_THROWS_WITH(parse(R"({"positional": "rotary", "d_model": 16, "n_heads": 2,
                              "rope": {"rotary_dims": 10}})"),
                    Contains("at most d_head"));
  CHECK_THROWS_WITH(parse(R"({"positional": "rotary", "architecture": "decoder",
                              "xl": {"enabled": true}})"),
                    Contains("xl.enabled uses relative positions only"));  // XL's own check
  CHECK_THROWS_WITH(parse(R"({"positional": "rotary", "performer": {"enabled": true}})"),
                    Contains("positional \"rotary\" cannot be combined with performer"));
  CHECK_THROWS_WITH(parse(R"({"positional": "rotary", "shaw": {"enabled": true}})"),
                    Contains("cannot be combined with shaw"));
  CHECK_THROWS_WITH(parse(R"({"rope": {"scaling": "llama3", "low_freq_factor": 4,
                              "high_freq_factor": 1}})"),
                    Contains("rope.high_freq_factor must be greater"));
  ModelConfig nan = parse("{}");
  nan.rope.theta = std::nanf("");
  CHECK_THROWS_WITH(validate_config(nan, "code"), Contains("rope.theta must be in"));
}

TEST_CASE("tiny-rope: the preset runs and traces its rotation table and frequencies", "[rope]") {
  const ModelConfig c = preset_config("tiny-rope");
  REQUIRE(c.positional == Positional::Rotary);
  Model model(c, init_params(c, c.seed));
  std::vector<TokenInfo> tokens;
  for (char ch : std::string("abcabcab")) tokens.push_back({int32_t(ch), std::string(1, ch)});
  const RunResult r = model.forward(tokens, {}, RunOptions{});
  const TracedArray* table = r.trace.find("positional");
  const TracedArray* freq = r.trace.find("positional.frequencies");
  REQUIRE(table);
  REQUIRE(freq);
  const int64_t dims = rope_rotary_dims(c);
  CHECK(table->tensor.shape == Shape{8, dims});
  REQUIRE(freq->tensor.shape == Shape{dims / 2});
  for (int64_t i = 0; i < dims / 2; ++i)  // theta^(-2i/r), by the paper's formula
    CHECK(freq->tensor.data[size_t(i)] ==
          Approx(std::pow(double(c.rope.theta), -2.0 * double(i) / double(dims))).epsilon(1e-6));
  CHECK(table->tensor.data[size_t(5 * dims + 1)] ==
        Approx(std::cos(5.0 * freq->tensor.data[1])).margin(1e-6));
}

TEST_CASE("the forwards' rotary positions: rows at positions first.. rotated as by hand",
          "[rope]") {
  // The object ForwardPass and the training Builder apply (core/model/qk_positions.h), on the
  // CPU backend after a cached prefix of 5 positions, against the rotation written out in double
  // with HF's pairing (i, i + r/2) over the first r of each head's dimensions.
  ModelConfig c = rope_config(4);
  c.d_model = 12;
  c.n_heads = 2;  // d_head 6: dimensions 4 and 5 of each head are left as they are
  const QkPositionsModule* module = qk_positions_module(c);
  REQUIRE(module);
  CHECK(std::string(module->name) == "rotary");
  CHECK_FALSE(qk_positions_module(preset_config("tiny-decoder")));
  const std::unique_ptr<QkPositions> positions = module->make(c);
  const std::unique_ptr<Backend> be = make_cpu_backend();
  Tensor x({3, 12});
  Rng rng(7);
  for (float& v : x.data) v = static_cast<float>(rng.uniform() * 2 - 1);
  const int64_t first = 5;
  const Tensor y = be->download(positions->apply(*be, be->upload(x), 2, first));
  for (int64_t row = 0; row < 3; ++row)
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t j = 0; j < 6; ++j) {
        const auto at = [&](int64_t d) { return double(x.data[size_t(row * 12 + h * 6 + d)]); };
        double want = at(j);
        if (j < 4) {
          const int64_t i = j % 2;  // the pair (i, i + 2)
          const double angle = double(first + row) * std::pow(10000.0, -2.0 * double(i) / 4.0);
          want = j < 2 ? at(i) * std::cos(angle) - at(i + 2) * std::sin(angle)
                       : at(i + 2) * std::cos(angle) + at(i) * std::sin(angle);
        }
        CHECK(y.data[size_t(row * 12 + h * 6 + j)] == Approx(want).margin(1e-5));
      }
  // The trace of positions 5..7: the table's rows and the frequencies beside it.
  Trace trace;
  positions->trace(trace, "positional", first, 3);
  REQUIRE(trace.find("positional"));
  REQUIRE(trace.find("positional.frequencies"));
  CHECK(trace.find("positional")->tensor.shape == Shape{3, 4});
  CHECK(trace.find("positional")->tensor.data[4 + 1] == Approx(std::cos(6.0 * 0.01)).margin(1e-6));
}

namespace atlas::train {

TEST_CASE("the rotation's backward matches finite differences", "[rope][train][grad]") {
  using MD = MatT<double>;
  for (bool adjacent : {false, true}) {
    ModelConfig c = rope_config(4);  // 4 of 8 dimensions rotate
    c.n_heads = 1;
    c.rope.pairing = adjacent ? RopePairing::Adjacent : RopePairing::Half;
    const Tensor table = rope_table(rope_frequencies(c, 5), 0, 5);
    Rng rng(7);
    ParamsT<double> p{{"x", fd::random_mat(rng, 5, 8)}};
    const MD weights = fd::random_mat(rng, 5, 8);
    auto loss = [&](const ParamsT<double>& q, ParamsT<double>* grads) {
      Tape<double> t;
      const int out = rope(t, t.param("x", q.at("x")), table, rope_args(c));
      if (grads) t.backward(out, weights, *grads);
      return t.value(out).cwiseProduct(weights).sum();
    };
    INFO("adjacent " << adjacent);
    CHECK(fd::check_gradients(p, loss) == 40);
  }
}

TEST_CASE("RoPE training forward equals the inference engine; whole-model gradients", "[rope][train]") {
  for (Architecture arch : {Architecture::Decoder, Architecture::EncoderDecoder}) {
    ModelConfig c = testing::small_config(arch);
    c.positional = Positional::Rotary;
    c.rope.pairing = arch == Architecture::Decoder ? RopePairing::Half : RopePairing::Adjacent;
    INFO("architecture " << int(arch));
    testing::check_same_as_inference(c, {3, 1, 4, 1, 5, 9, 2, 6},
                                     arch == Architecture::Decoder ? std::vector<int32_t>{}
                                                                   : std::vector<int32_t>{257, 7, 8});
  }
  const ModelConfig c = [] {
    ModelConfig c = testing::small_config(Architecture::Decoder);
    c.positional = Positional::Rotary;
    return c;
  }();
  ParamsT<double> params = testing::noisy_params(c);
  const Example ex{{3, 1, 4, 1, 5, 9}, {}, {1, 4, 1, 5, 9, 2}};
  CHECK(fd::check_gradients(params, testing::cross_entropy_loss(c, ex), 1e-6, 8) > 100);
}

}  // namespace atlas::train
