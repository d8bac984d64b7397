// Recurrent encoder-decoder with attention and the Pointer Network (core/variants/seq2seq/rnn_cells.cpp,
// core/variants/seq2seq/seq2seq.cpp): cell steps against hand-evaluated equations, the bidirectional encoder and a
// whole Bahdanau decoder against naive loops written here, Luong's local windows and Gaussian by
// hand, hard attention, pointer distributions, config errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <set>

#include "core/config/config.h"
#include "core/tensor/error.h"
#include "core/model/model.h"
#include "core/model/params.h"
#include "core/model/presets.h"
#include "core/variants/seq2seq/rnn_cells.h"
#include "core/variants/seq2seq/seq2seq.h"
#include "tests/core/token_lists.h"

using namespace atlas;
using atlas::test::tokens;

namespace {

Mat col(std::initializer_list<float> v) {
  Mat m(int64_t(v.size()), 1);
  int64_t i = 0;
  for (float x : v) m(i++, 0) = x;
  return m;
}

RowVec row_vec(std::initializer_list<float> v) {
  RowVec r(int64_t(v.size()));
  int64_t i = 0;
  for (float x : v) r(i++) = x;
  return r;
}

double sig(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// Naive GRU (Cho et al. 2014) on std::vector, gate rows [r; z; n].
std::vector<double> naive_gru(const Tensor& w, const Tensor& u, const Tensor& b,
                              const std::vector<double>& x, const std::vector<double>& h) {
  const size_t H = h.size(), in = x.size();
  auto wx = [&](size_t r) {
    double s = b.data[r];
    for (size_t j = 0; j < in; ++j) s += w.data[r * in + j] * x[j];
    return s;
  };
  auto uh = [&](size_t r, const std::vector<double>& v) {
    double s = 0;
    for (size_t j = 0; j < H; ++j) s += u.data[r * H + j] * v[j];
    return s;
  };
  std::vector<double> rr(H), zz(H), rh(H), out(H);
  for (size_t i = 0; i < H; ++i) {
    rr[i] = sig(wx(i) + uh(i, h));
    zz[i] = sig(wx(H + i) + uh(H + i, h));
    rh[i] = rr[i] * h[i];
  }
  for (size_t i = 0; i < H; ++i) {
    const double n = std::tanh(wx(2 * H + i) + uh(2 * H + i, rh));
    out[i] = (1 - zz[i]) * n + zz[i] * h[i];
  }
  return out;
}

std::vector<double> naive_run(const ParamStore& p, const std::string& pre,
                              const std::vector<std::vector<double>>& xs, size_t H, bool reverse,
                              std::vector<std::vector<double>>& out) {
  std::vector<double> h(H, 0.0);
  out.assign(xs.size(), {});
  for (size_t n = 0; n < xs.size(); ++n) {
    const size_t i = reverse ? xs.size() - 1 - n : n;
    h = naive_gru(p.at(pre + ".w"), p.at(pre + ".u"), p.at(pre + ".b"), xs[i], h);
    out[i] = h;
  }
  return h;
}

ModelConfig small_seq2seq() {
  ModelConfig c;
  c.name = "s2s-test";
  c.architecture = Architecture::EncoderDecoder;
  c.vocab_size = 256;
  c.d_model = 3;
  c.n_heads = 1;
  c.n_layers = 1;
  c.n_decoder_layers = 1;
  c.positional = Positional::None;
  c.output = OutputHead::None;
  c.max_positions = 32;
  c.attention_kind = ScoreConfig{.function = ScoreFunction::Additive};
  c.stack = Seq2SeqConfig{};
  c.rnn_seq2seq()->hidden_size = 2;
  return c;
}

}  // namespace

TEST_CASE("GRU step equals the hand-evaluated equations", "[seq2seq]") {
  RnnCellWeights w{col({0.5f, -0.5f, 1.0f}), col({1.0f, 0.5f, -1.0f}), row_vec({0.0f, 0.1f, 0.2f})};
  RnnState s = zero_state(1);
  s.h(0) = 0.5f;
  // r = sig(0.5*2 + 1*0.5) = 0.8175745; z = sig(-1 + 0.25 + 0.1) = 0.3429895
  // n = tanh(2 - 1*(r*0.5) + 0.2) = 0.9458884; h' = (1 - z) n + z 0.5 = 0.7929534
  const RnnState next = rnn_step(RnnCell::Gru, w, row_vec({2.0f}), s);
  CHECK(next.h(0) == Approx(0.7929534));
}

TEST_CASE("LSTM step equals the hand-evaluated equations", "[seq2seq]") {
  RnnCellWeights w{col({1.0f, 0.5f, -1.0f, 2.0f}), col({0.5f, -0.5f, 1.0f, 0.0f}),
                   row_vec({0.0f, 1.0f, 0.0f, -1.0f})};
  RnnState s = zero_state(1);
  s.h(0) = 0.2f;
  s.c(0) = 0.3f;
  // i = sig(1 + 0.1) = 0.7502601, f = sig(0.5 - 0.1 + 1) = 0.8021839, g = tanh(-1 + 0.2) =
  // -0.6640368, o = sig(2 - 1) = 0.7310586; c' = f 0.3 + i g = -0.2575451; h' = o tanh(c') = -0.1842253
  const RnnState next = rnn_step(RnnCell::Lstm, w, row_vec({1.0f}), s);
  CHECK(next.c(0) == Approx(-0.2575451));
  CHECK(next.h(0) == Approx(-0.1842253));
}

TEST_CASE("bidirectional encoder = forward and reversed passes concatenated", "[seq2seq]") {
  ModelConfig c = small_seq2seq();
  const ParamStore p = init_params(c, 11);
  std::vector<std::vector<double>> xs = {{0.5, -1, 0.2}, {1, 0, -0.3}, {-0.7, 0.4, 0.9}, {0.1, 0.1, 0.1}};
  Mat x(4, 3);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) x(i, j) = float(xs[size_t(i)][size_t(j)]);
  auto weights = [&](const std::string& pre) {
    return RnnCellWeights{p.at(pre + ".w").mat(), p.at(pre + ".u").mat(),
                          Eigen::Map<const RowVec>(p.at(pre + ".b").data.data(), p.at(pre + ".b").numel())};
  };
  const Mat got = bidirectional_encode(RnnCell::Gru, weights("encoder.forward"), weights("encoder.backward"), x);
  std::vector<std::vector<double>> f, b;
  naive_run(p, "encoder.forward", xs, 2, false, f);
  naive_run(p, "encoder.backward", xs, 2, true, b);
  REQUIRE(got.rows() == 4);
  REQUIRE(got.cols() == 4);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j) {
      CHECK(got(i, j) == Approx(f[size_t(i)][size_t(j)]).margin(1e-5));
      CHECK(got(i, 2 + j) == Approx(b[size_t(i)][size_t(j)]).margin(1e-5));
    }
}

TEST_CASE("Bahdanau decoder matches a naive loop of the paper's equations", "[seq2seq]") {
  ModelConfig c = small_seq2seq();
  const ParamStore p = init_params(c, 3);
  Model m(c, p);
  const auto src = tokens({10, 20, 30}), tgt = tokens({40, 50, 60, 70});
  RunOptions o;
  const RunResult r = m.forward(src, tgt, o);
  const Tensor& align = r.trace.find("seq2seq.alignment")->tensor;
  REQUIRE(align.shape == Shape{1, 4, 3});
  const Tensor& emb = p.at("embed.tokens");
  const double scale = std::sqrt(3.0);  // scale_embedding: rows times sqrt(d_model)
  auto embed = [&](int id) {
    std::vector<double> v(3);
    for (int j = 0; j < 3; ++j) v[size_t(j)] = scale * emb.data[size_t(id * 3 + j)];
    return v;
  };
  std::vector<std::vector<double>> xs, f, b;
  for (const auto& t : src) xs.push_back(embed(t.id));
  naive_run(p, "encoder.forward", xs, 2, false, f);
  naive_run(p, "encoder.backward", xs, 2, true, b);
  std::vector<std::vector<double>> h;  // h_i = [f_i; b_i]
  for (size_t i = 0; i < 3; ++i) h.push_back({f[i][0], f[i][1], b[i][0], b[i][1]});
  // s_0 = tanh(W_init b_1 + b)
  const Tensor& wi = p.at("decoder.init.w");
  std::vector<double> s(2);
  for (size_t i = 0; i < 2; ++i) s[i] = std::tanh(wi.data[i * 2] * b[0][0] + wi.data[i * 2 + 1] * b[0][1]);
  const Tensor &w1 = p.at("attention.score.w1"), &w2 = p.at("attention.score.w2"), &v = p.at("attention.score.v");
  std::vector<double> y = {scale * p.at("decoder.start").data[0], scale * p.at("decoder.start").data[1],
                           scale * p.at("decoder.start").data[2]};
  for (size_t t = 0; t < 4; ++t) {
    std::vector<double> e(3);
    double mx = -1e300, z = 0;
    for (size_t i = 0; i < 3; ++i) {
      double sc = 0;
      for (size_t a = 0; a < 2; ++a) {  // d_attn = hidden = 2
        double u = 0;
        for (size_t x = 0; x < 2; ++x) u += w1.data[a * 2 + x] * s[x];
        for (size_t x = 0; x < 4; ++x) u += w2.data[a * 4 + x] * h[i][x];
        sc += v.data[a] * std::tanh(u);
      }
      e[i] = sc;
      mx = std::max(mx, sc);
    }
    for (double sc : e) z += std::exp(sc - mx);
    std::vector<double> ctx(4, 0.0);
    double rowsum = 0;
    for (size_t i = 0; i < 3; ++i) {
      const double a = std::exp(e[i] - mx) / z;
      CHECK(align.data[t * 3 + i] == Approx(a).margin(1e-5));
      rowsum += align.data[t * 3 + i];
      for (size_t x = 0; x < 4; ++x) ctx[x] += a * h[i][x];
    }
    CHECK(rowsum == Approx(1.0).margin(1e-5));
    std::vector<double> in = y;
    in.insert(in.end(), ctx.begin(), ctx.end());
    s = naive_gru(p.at("decoder.cell.w"), p.at("decoder.cell.u"), p.at("decoder.cell.b"), in, s);
    y = embed(tgt[t].id);
  }
}

TEST_CASE("Luong local windows and the local-p Gaussian by hand", "[seq2seq]") {
  float center = -1;
  // local-m: p_t = t, clamped to the last source position.
  auto w = local_window(Alignment::LocalM, 1, 6, 2, 0.0f, &center);
  CHECK(center == 1.0f);
  CHECK(w == std::vector<uint8_t>{1, 1, 1, 1, 0, 0});
  w = local_window(Alignment::LocalM, 9, 6, 2, 0.0f, &center);
  CHECK(center == 5.0f);
  CHECK(w == std::vector<uint8_t>{0, 0, 0, 1, 1, 1});
  // local-p: logit 0 -> p_t = 6 sigmoid(0) = 3; window |i - 3| <= 2.
  w = local_window(Alignment::LocalP, 0, 6, 2, 0.0f, &center);
  CHECK(center == 3.0f);
  CHECK(w == std::vector<uint8_t>{0, 1, 1, 1, 1, 1});
  RowVec e = RowVec::Zero(6);
  const RowVec a = align_step(e, w, Alignment::LocalP, center, 2, Selection::Soft);
  // softmax over 5 equal scores = 0.2, times exp(-(i - 3)^2 / (2 sigma^2)), sigma = D/2 = 1
  CHECK(a(0) == 0.0f);
  CHECK(a(1) == Approx(0.2 * 0.1353353));
  CHECK(a(2) == Approx(0.2 * 0.6065307));
  CHECK(a(3) == Approx(0.2));
  CHECK(a(4) == Approx(0.2 * 0.6065307));
  CHECK(a(5) == Approx(0.2 * 0.1353353));
  CHECK(std::isinf(e(0)));
}

TEST_CASE("hard attention is one-hot at the soft argmax", "[seq2seq]") {
  RowVec e(3);
  e << 1.0f, 3.0f, 2.0f;
  const RowVec a = align_step(e, {1, 1, 1}, Alignment::Global, 0.0f, 1, Selection::Hard);
  CHECK(a(0) == 0.0f);
  CHECK(a(1) == 1.0f);
  CHECK(a(2) == 0.0f);
  // In a whole model: each row one-hot, at the argmax of the traced (windowed) scores.
  ModelConfig c = parse_config(preset_json("seq2seq-gru-hard"), "preset");
  Model m(c, init_params(c, c.seed));
  RunOptions o;
  o.trace.scores = true;
  const RunResult r = m.run("l' accord sur la zone économique", "the agreement on the european", o);
  const Tensor& al = r.trace.find("seq2seq.alignment")->tensor;
  const Tensor& sc = r.trace.find("seq2seq.scores")->tensor;
  const int64_t lt = al.shape[1], ls = al.shape[2];
  for (int64_t t = 0; t < lt; ++t) {
    int64_t best = 0, ones = 0;
    for (int64_t i = 0; i < ls; ++i) {
      if (sc.data[size_t(t * ls + i)] > sc.data[size_t(t * ls + best)]) best = i;
      ones += al.data[size_t(t * ls + i)] == 1.0f;
    }
    CHECK(ones == 1);
    CHECK(al.data[size_t(t * ls + best)] == 1.0f);
  }
}

TEST_CASE("local-p model rows are the windowed softmax times the Gaussian", "[seq2seq]") {
  ModelConfig c = parse_config(preset_json("seq2seq-lstm-luong-local"), "preset");
  Model m(c, init_params(c, c.seed));
  RunOptions o;
  o.trace.scores = true;
  const RunResult r = m.run("l' accord sur la zone économique européenne", "the agreement on the", o);
  const Tensor& al = r.trace.find("seq2seq.alignment")->tensor;
  const Tensor& sc = r.trace.find("seq2seq.scores")->tensor;
  const Tensor& ctr = r.trace.find("seq2seq.local_center")->tensor;
  const int64_t lt = al.shape[1], ls = al.shape[2];
  REQUIRE(ctr.shape == Shape{lt});
  for (int64_t t = 0; t < lt; ++t) {
    const double p = ctr.data[size_t(t)];
    CHECK(p >= 0.0);
    CHECK(p <= double(ls));
    double mx = -1e300, z = 0;
    for (int64_t i = 0; i < ls; ++i)
      if (std::fabs(double(i) - p) <= 2.0) mx = std::max(mx, double(sc.data[size_t(t * ls + i)]));
    for (int64_t i = 0; i < ls; ++i)
      if (std::fabs(double(i) - p) <= 2.0) z += std::exp(sc.data[size_t(t * ls + i)] - mx);
    for (int64_t i = 0; i < ls; ++i) {
      const bool in = std::fabs(double(i) - p) <= 2.0;
      const double want = in ? std::exp(sc.data[size_t(t * ls + i)] - mx) / z *
                                   std::exp(-(i - p) * (i - p) / (2.0 * 1.0 * 1.0))
                             : 0.0;
      CHECK(al.data[size_t(t * ls + i)] == Approx(want).margin(1e-5));
    }
  }
}

TEST_CASE("GRU and LSTM presets: alignment rows sum to 1, shapes", "[seq2seq]") {
  for (const char* name : {"seq2seq-gru-bahdanau"}) {
    ModelConfig c = parse_config(preset_json(name), "preset");
    for (RnnCell cell : {RnnCell::Gru, RnnCell::Lstm})
      for (AttentionStyle style : {AttentionStyle::Bahdanau, AttentionStyle::Luong}) {
        c.rnn_seq2seq()->cell = cell;
        c.rnn_seq2seq()->style = style;
        Model m(c, init_params(c, 1));
        RunOptions o;
        o.trace.hidden = true;
        const RunResult r = m.run("l' accord sur la zone", "the agreement on", o);
        const Tensor& al = r.trace.find("seq2seq.alignment")->tensor;
        REQUIRE(al.shape == Shape{1, 3, 5});
        CHECK(r.trace.find("decoder.layer0.cross_attn")->tensor.data == al.data);
        CHECK(r.trace.find("seq2seq.encoder_states")->tensor.shape == Shape{5, 64});
        CHECK(r.trace.find("seq2seq.decoder_states")->tensor.shape == Shape{3, 32});
        CHECK(r.output.shape == Shape{3, c.vocab_size});
        for (int t = 0; t < 3; ++t) {
          double s = 0;
          for (int i = 0; i < 5; ++i) s += al.data[size_t(t * 5 + i)];
          CHECK(s == Approx(1.0).margin(1e-5));
        }
      }
  }
}

TEST_CASE("seq2seq config errors name the key", "[seq2seq]") {
  const std::string base = R"({"architecture": "encoder-decoder", "n_decoder_layers": 1, )";
  auto err = [&](const std::string& rest) {
    try {
      parse_config(base + rest + "}", "t");
    } catch (const AtlasError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(err(R"("rnn_seq2seq": {"enabled": true, "cell": "rnn"})"), Catch::Contains("rnn_seq2seq.cell"));
  CHECK_THAT(err(R"("rnn_seq2seq": {"enabled": true, "window": 0})"), Catch::Contains("rnn_seq2seq.window"));
  CHECK_THAT(err(R"("rnn_seq2seq": {"enabled": true, "alignment": "local"})"),
             Catch::Contains("rnn_seq2seq.alignment"));
  CHECK_THAT(err(R"("bos_id": 3, "rnn_seq2seq": {"enabled": true})"), Catch::Contains("bos_id"));
  CHECK_THAT(err(R"("rnn_seq2seq": {"enabled": true, "bidirectional": true})"),
             Catch::Contains("score.function"));  // scaled_dot needs equal sizes
  CHECK_THAT(err(R"("rnn_seq2seq": {"enabled": true, "hidden_sise": 3})"), Catch::Contains("hidden_size"));
  try {
    parse_config(R"({"architecture": "encoder", "rnn_seq2seq": {"enabled": true}})", "t");
    FAIL("accepted an encoder-only seq2seq");
  } catch (const AtlasError& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("rnn_seq2seq.enabled"));
  }
  // An empty target is an error for a vocabulary decoder (teacher forcing needs it).
  ModelConfig c = small_seq2seq();
  Model m(c, init_params(c, 1));
  CHECK_THROWS_WITH(m.forward(tokens({1, 2}), {}, RunOptions{}), Catch::Contains("target"));
}

TEST_CASE("pointer probabilities sum to 1 over input positions", "[pointer]") {
  ModelConfig c = parse_config(preset_json("pointer-net"), "preset");
  Model m(c, init_params(c, c.seed));
  RunOptions o;
  // Teacher forcing: target "1 2 3" points at input positions 1, 2, 0 of "3 1 2".
  RunResult r = m.run("3 1 2", "1 2 3", o);
  const Tensor& p = r.trace.find("pointer.probs")->tensor;
  REQUIRE(p.shape == Shape{1, 3, 3});
  const Tensor& idx = r.trace.find("pointer.indices")->tensor;
  CHECK(idx.data == std::vector<float>{1, 2, 0});
  for (int t = 0; t < 3; ++t) {
    double s = 0;
    for (int i = 0; i < 3; ++i) s += p.data[size_t(t * 3 + i)];
    CHECK(s == Approx(1.0).margin(1e-5));
  }
  CHECK(!r.is_logits);
  CHECK(r.output.shape == Shape{3, 3});
  // Greedy decoding: Ls steps, a permutation of the input positions.
  r = m.run("5 9 2 7", "", o);
  const Tensor& g = r.trace.find("pointer.indices")->tensor;
  REQUIRE(g.shape == Shape{4});
  std::set<float> seen(g.data.begin(), g.data.end());
  CHECK(seen == std::set<float>{0, 1, 2, 3});
  const Tensor& gp = r.trace.find("pointer.probs")->tensor;
  for (int t = 0; t < 4; ++t) {  // the pointed position is the row's argmax
    int best = 0;
    for (int i = 1; i < 4; ++i)
      if (gp.data[size_t(t * 4 + i)] > gp.data[size_t(t * 4 + best)]) best = i;
    CHECK(float(best) == g.data[size_t(t)]);
  }
  CHECK(r.trace.target_tokens.size() == 4);
  // A target element that is not in the input is an error naming it.
  CHECK_THROWS_WITH(m.run("3 1 2", "1 4", o), Catch::Contains("\"4\""));
}

TEST_CASE("greedy pointer with a local window still gives a permutation", "[pointer]") {
  ModelConfig c = parse_config(preset_json("pointer-net"), "preset");
  c.rnn_seq2seq()->alignment = Alignment::LocalM;
  c.rnn_seq2seq()->window = 1;  // p_t = t: the window [t - 1, t + 1] runs out of unpointed positions
  Model m(c, init_params(c, 9));
  const RunResult r = m.run("6 5 4 3 2 1 9 8", "", RunOptions{});
  const Tensor& g = r.trace.find("pointer.indices")->tensor;
  std::set<float> seen(g.data.begin(), g.data.end());
  CHECK(seen.size() == 8);
  CHECK(r.trace.find("pointer.local_center")->tensor.shape == Shape{8});
}
