// Activation patching on an encoder-decoder model (core/analysis/patching.h) against an
// independent construction: the naive encoder-decoder forward of tests/core/naive_transformer.h
// (plain loops in double), run once on the source input (source and target texts) to take an
// activation and once on the target input with it put in by hand. Every head, q, k, v and
// pattern cell of the encoder's self-attention, the decoder's self-attention and the decoder's
// cross-attention must equal that hand-edited run's metric.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <tuple>
#include <string>

#include "core/analysis/patching.h"
#include "core/model/model.h"
#include "core/model/params.h"
#include "core/tensor/error.h"
#include "tests/core/naive_transformer.h"
#include "tests/core/preset_test_util.h"

using namespace atlas;

namespace {

using naive::Matrix;

std::vector<int> encdec_ids(const std::vector<TokenInfo>& t) {
  std::vector<int> ids;
  for (const TokenInfo& x : t) ids.push_back(x.id);
  return ids;
}

Tensor encdec_tensor(const Matrix& m) {
  Tensor t({int64_t(m.size()), int64_t(m[0].size())});
  for (size_t i = 0; i < m.size(); ++i)
    for (size_t k = 0; k < m[i].size(); ++k) t.data[i * m[i].size() + k] = float(m[i][k]);
  return t;
}

// A naive run that records every sub-layer's q, k, v, heads' outputs ('o') and each head's
// probabilities ('p') by prefix (and head).
struct EncDecRecord {
  Matrix logits;
  std::map<std::tuple<std::string, char, int64_t>, Matrix> acts;
};

EncDecRecord encdec_recorded(const ModelConfig& c, const ParamStore& p, const PatchingInput& in) {
  EncDecRecord r;
  r.logits = naive::forward(c, p, encdec_ids(in.source), encdec_ids(in.target),
                            [&r](const std::string& pre, char what, int64_t head, Matrix& m) {
                              r.acts[{pre, what, head}] = m;
                            })
                 .logits;
  return r;
}

// The naive run of `in` with head h's columns of `what` in sub-layer `row` set to `from`'s
// (rows `p` only, or every row when p < 0); what = 'p': head h's probabilities, all of them.
Matrix encdec_edited(const ModelConfig& c, const ParamStore& p, const PatchingInput& in, const EncDecRecord& from,
                     const std::string& row, char what, int64_t h, int64_t pos = -1) {
  const size_t dh = size_t(c.d_head());
  return naive::forward(c, p, encdec_ids(in.source), encdec_ids(in.target),
                        [&](const std::string& pre, char w, int64_t head, Matrix& m) {
                          if (pre != row || w != what) return;
                          if (w == 'p') {
                            if (head == h) m = from.acts.at({pre, w, head});
                            return;
                          }
                          const Matrix& s = from.acts.at({pre, w, head});
                          for (size_t i = 0; i < m.size(); ++i)
                            if (pos < 0 || int64_t(i) == pos)
                              for (size_t t = size_t(h) * dh; t < size_t(h + 1) * dh; ++t) m[i][t] = s[i][t];
                        })
      .logits;
}

struct EncDecFixture {
  ModelConfig c = preset_test::small_preset_config("tiny-encoder-decoder");
  Model model{c, init_params(c, 17)};
  PatchingInput clean, corrupted;
  EncDecFixture(const std::string& src_a, const std::string& tgt_a, const std::string& src_b, const std::string& tgt_b) {
    std::tie(clean.source, clean.target) = model.tokenize(src_a, tgt_a);
    std::tie(corrupted.source, corrupted.target) = model.tokenize(src_b, tgt_b);
  }
  // The rows patching must name, written from the config: encoder self-attentions, then each
  // decoder layer's self- and cross-attention.
  std::vector<std::string> expected_rows() const {
    std::vector<std::string> rows;
    for (int64_t l = 0; l < c.n_layers; ++l) rows.push_back("encoder.layer" + std::to_string(l) + ".attn");
    for (int64_t l = 0; l < c.decoder_layers(); ++l) {
      rows.push_back("decoder.layer" + std::to_string(l) + ".self_attn");
      rows.push_back("decoder.layer" + std::to_string(l) + ".cross_attn");
    }
    return rows;
  }
};

void check_encdec_cell(double got, double want) { CHECK(got == Approx(want).epsilon(2e-4).margin(2e-4)); }

PatchSpec encdec_spec(PatchSite site, PatchDirection dir) {
  PatchSpec spec;
  spec.site = site;
  spec.direction = dir;
  spec.metric = PatchMetric::LogitDiff;
  spec.token_a = 'c';
  spec.token_b = 'b';
  return spec;
}

}  // namespace

TEST_CASE("encoder-decoder head patching equals the naive run edited by hand, in every attention sub-layer",
          "[patching][encdec]") {
  // the sources differ at 2, the targets at 3 (BOS first): both stacks carry the difference
  const EncDecFixture f("abcab c", "bca", "abxab c", "bcb");
  const ModelConfig& c = f.c;
  const ParamStore& p = f.model.params();
  const EncDecRecord clean = encdec_recorded(c, p, f.clean), corrupted = encdec_recorded(c, p, f.corrupted);
  // the oracle is the engine's model: its clean logits at the measured (last) target row
  const Tensor engine = f.model.forward(f.clean.source, f.clean.target, RunOptions{}).output;
  const size_t V = size_t(c.vocab_size), last = f.clean.target.size() - 1;
  for (size_t v = 0; v < V; ++v)
    REQUIRE(double(engine.data[last * V + v]) == Approx(clean.logits[last][v]).margin(1e-4));

  const int64_t H = c.n_heads;
  const std::vector<std::string> rows = f.expected_rows();
  for (const PatchDirection dir : {PatchDirection::Denoise, PatchDirection::Noise}) {
    CAPTURE(patch_direction_name(dir));
    const bool denoise = dir == PatchDirection::Denoise;
    const EncDecRecord& source = denoise ? clean : corrupted;
    const PatchingInput& target = denoise ? f.corrupted : f.clean;
    const Tensor clean_logits = encdec_tensor(clean.logits);
    PatchSpec spec = encdec_spec(PatchSite::Head, dir);
    auto want = [&](const Matrix& logits) { return patch_metric(spec, clean_logits, encdec_tensor(logits)); };

    const PatchResult r = activation_patching(f.model, f.clean, f.corrupted, spec, RunOptions{});
    REQUIRE(r.row_names == rows);
    REQUIRE(r.shape == std::vector<int64_t>{int64_t(rows.size()), H});
    check_encdec_cell(r.clean, want(clean.logits));
    check_encdec_cell(r.corrupted, want(corrupted.logits));
    REQUIRE(std::fabs(r.clean - r.corrupted) > 1e-3);
    CHECK(r.position == int64_t(last));
    CHECK(r.runs == int64_t(rows.size()) * H);
    for (size_t row = 0; row < rows.size(); ++row)
      for (int64_t h = 0; h < H; ++h) {
        CAPTURE(rows[row], h);
        check_encdec_cell(r.raw[size_t(patch_cell(r, int64_t(row), h))],
                          want(encdec_edited(c, p, target, source, rows[row], 'o', h)));
      }

    // q, k, v: a cross-attention head's k and v are its projections of the encoder's output
    // pattern: a cross-attention head's [target, source] probabilities
    for (const PatchSite site : {PatchSite::Q, PatchSite::K, PatchSite::V, PatchSite::Pattern}) {
      spec.site = site;
      CAPTURE(patch_site_name(site));
      const char what = site == PatchSite::Q ? 'q' : site == PatchSite::K ? 'k' : site == PatchSite::V ? 'v' : 'p';
      const PatchResult s = activation_patching(f.model, f.clean, f.corrupted, spec, RunOptions{});
      REQUIRE(s.row_names == rows);
      for (size_t row = 0; row < rows.size(); ++row)
        for (int64_t h = 0; h < H; h += 3) {
          CAPTURE(rows[row], h);
          check_encdec_cell(s.raw[size_t(patch_cell(s, int64_t(row), h))],
                            want(encdec_edited(c, p, target, source, rows[row], what, h)));
        }
    }
  }
}

TEST_CASE("encoder-decoder head-pos patching: source positions on encoder rows, target positions on decoder rows",
          "[patching][encdec]") {
  const EncDecFixture f("abcab c", "bca", "abxab c", "bcb");  // source 7 tokens, target 4 (BOS first)
  const ModelConfig& c = f.c;
  const ParamStore& p = f.model.params();
  const EncDecRecord clean = encdec_recorded(c, p, f.clean);
  PatchSpec spec = encdec_spec(PatchSite::HeadPos, PatchDirection::Denoise);
  const PatchResult r = activation_patching(f.model, f.clean, f.corrupted, spec, RunOptions{});
  const std::vector<std::string> rows = f.expected_rows();
  const int64_t Ls = int64_t(f.clean.source.size()), Lt = int64_t(f.clean.target.size());
  REQUIRE(Ls == 7);
  REQUIRE(Lt == 4);
  REQUIRE(r.shape == std::vector<int64_t>{int64_t(rows.size()), c.n_heads, Ls});
  const Tensor clean_logits = encdec_tensor(clean.logits);
  int64_t expected_runs = 0;
  for (size_t row = 0; row < rows.size(); ++row) {
    const int64_t len = rows[row].rfind("encoder", 0) == 0 ? Ls : Lt;
    for (int64_t h = 0; h < c.n_heads; ++h)
      for (int64_t pos = 0; pos < Ls; ++pos) {
        CAPTURE(rows[row], h, pos);
        const double got = r.raw[size_t(patch_cell(r, int64_t(row), h, pos))];
        if (pos >= len) {
          CHECK(std::isnan(got));
          CHECK(std::isnan(r.normalised[size_t(patch_cell(r, int64_t(row), h, pos))]));
          continue;
        }
        ++expected_runs;
        if (h != 1) continue;  // one head in full against the oracle, the others counted
        check_encdec_cell(got, patch_metric(spec, clean_logits,
                                            encdec_tensor(encdec_edited(c, p, f.corrupted, clean, rows[row], 'o', h, pos))));
      }
  }
  CHECK(r.runs == expected_runs);
}

TEST_CASE("encoder-decoder resid patching equals the naive run with the residual row set by hand, in both stacks",
          "[patching][encdec]") {
  const EncDecFixture f("abcab c", "bca", "abxab c", "bcb");  // source 7 tokens, target 4
  const ModelConfig& c = f.c;
  const ParamStore& p = f.model.params();
  const EncDecRecord clean = encdec_recorded(c, p, f.clean), corrupted = encdec_recorded(c, p, f.corrupted);
  const Tensor clean_logits = encdec_tensor(clean.logits);
  std::vector<std::string> layers;
  for (int64_t l = 0; l < c.n_layers; ++l) layers.push_back("encoder.layer" + std::to_string(l));
  for (int64_t l = 0; l < c.decoder_layers(); ++l) layers.push_back("decoder.layer" + std::to_string(l));
  const int64_t Ls = int64_t(f.clean.source.size()), Lt = int64_t(f.clean.target.size());
  for (const PatchDirection dir : {PatchDirection::Denoise, PatchDirection::Noise}) {
    CAPTURE(patch_direction_name(dir));
    const bool denoise = dir == PatchDirection::Denoise;
    const PatchSpec spec = encdec_spec(PatchSite::Resid, dir);
    const PatchResult r = activation_patching(f.model, f.clean, f.corrupted, spec, RunOptions{});
    REQUIRE(r.row_names == layers);
    REQUIRE(r.shape == std::vector<int64_t>{int64_t(layers.size()), Ls});
    for (size_t row = 0; row < layers.size(); ++row)
      for (int64_t pos = 0; pos < Ls; ++pos) {
        CAPTURE(layers[row], pos);
        const double got = r.raw[size_t(patch_cell(r, int64_t(row), pos))];
        if (layers[row].rfind("decoder", 0) == 0 && pos >= Lt) {
          CHECK(std::isnan(got));
          continue;
        }
        const EncDecRecord& from = denoise ? clean : corrupted;
        const Matrix edited = naive::forward(
            c, p, encdec_ids((denoise ? f.corrupted : f.clean).source), encdec_ids((denoise ? f.corrupted : f.clean).target),
            [&](const std::string& pre, char w, int64_t, Matrix& m) {
              if (w == 'r' && pre == layers[row]) m[size_t(pos)] = from.acts.at({pre, 'r', -1})[size_t(pos)];
            }).logits;
        check_encdec_cell(got, patch_metric(spec, clean_logits, encdec_tensor(edited)));
      }
  }
}

TEST_CASE("encoder-decoder patching: a stack whose inputs agree gives exactly the unpatched run (0 denoising, 1 noising)",
          "[patching][encdec]") {
  // Same source, different targets: the encoder's heads are the same in both runs, so patching
  // one changes nothing and the normalised value is exactly the unpatched run's.
  const EncDecFixture same_source("abcab c", "bca", "abcab c", "bcb");
  // Different sources, same target: decoder layer 0's self-attention reads only the target.
  const EncDecFixture same_target("abcab c", "bca", "abxab c", "bca");
  for (const PatchDirection dir : {PatchDirection::Denoise, PatchDirection::Noise}) {
    CAPTURE(patch_direction_name(dir));
    const double unpatched = dir == PatchDirection::Denoise ? 0.0 : 1.0;
    const PatchSpec spec = encdec_spec(PatchSite::Head, dir);
    const PatchResult a = activation_patching(same_source.model, same_source.clean, same_source.corrupted, spec, RunOptions{});
    REQUIRE(a.clean != a.corrupted);
    for (int64_t row = 0; row < same_source.c.n_layers; ++row)
      for (int64_t h = 0; h < same_source.c.n_heads; ++h) CHECK(a.normalised[size_t(patch_cell(a, row, h))] == unpatched);
    const PatchResult b = activation_patching(same_target.model, same_target.clean, same_target.corrupted, spec, RunOptions{});
    REQUIRE(b.clean != b.corrupted);
    const int64_t dec0_self = same_target.c.n_layers;  // the first decoder row
    REQUIRE(b.row_names[size_t(dec0_self)] == "decoder.layer0.self_attn");
    for (int64_t h = 0; h < same_target.c.n_heads; ++h)
      CHECK(b.normalised[size_t(patch_cell(b, dec0_self, h))] == unpatched);
    // and a cross-attention head there does move the metric: the identity is not vacuous
    bool moved = false;
    for (int64_t h = 0; h < same_target.c.n_heads; ++h)
      moved |= b.normalised[size_t(patch_cell(b, dec0_self + 1, h))] != unpatched;
    CHECK(moved);
  }
}

TEST_CASE("encoder-decoder patching refuses mismatched lengths and layer sites, naming the side and both lengths",
          "[patching][encdec]") {
  const EncDecFixture f("abcab c", "bca", "abcab", "bcb");
  PatchSpec spec = encdec_spec(PatchSite::Head, PatchDirection::Denoise);
  REQUIRE_THROWS_WITH(activation_patching(f.model, f.clean, f.corrupted, spec, RunOptions{}),
                      Catch::Contains("clean source is 7 tokens") && Catch::Contains("corrupted source 5"));
  const EncDecFixture g("abcab c", "bca", "abxab c", "bcbcd");
  REQUIRE_THROWS_WITH(check_patching(g.model, g.clean, g.corrupted, spec),
                      Catch::Contains("clean target is 4 tokens") && Catch::Contains("corrupted target 6"));
  PatchingInput no_target = f.clean;
  no_target.target.clear();
  REQUIRE_THROWS_WITH(check_patching(f.model, no_target, no_target, spec), Catch::Contains("non-empty target"));
  for (const PatchSite site : {PatchSite::Attn, PatchSite::Mlp}) {
    spec.site = site;
    REQUIRE_THROWS_WITH(check_patching(f.model, f.clean, f.clean, spec),
                        Catch::Contains("two attention sub-layers") && Catch::Contains("use --site resid, or head-pos"));
  }
  spec.site = PatchSite::Head;
  spec.position = 4;  // the target has 4 positions
  REQUIRE_THROWS_WITH(check_patching(f.model, f.clean, f.clean, spec),
                      Catch::Contains("position 4 is outside the target's 4 positions"));
  // the one-input form (path and attribution patching) says where encoder-decoder models go
  spec.position = -1;
  REQUIRE_THROWS_WITH(check_patching(f.model, f.clean.source, f.clean.source, spec),
                      Catch::Contains("encoder-decoder") && Catch::Contains("atlas patch --target"));
  // a target on a decoder-only model
  const ModelConfig dec = preset_test::small_preset_config("tiny-decoder");
  const Model decoder(dec, init_params(dec, 3));
  const PatchingInput with_target{decoder.tokenize("abcd", "").first, f.clean.target};
  REQUIRE_THROWS_WITH(check_patching(decoder, with_target, with_target, spec),
                      Catch::Contains("only used by encoder-decoder models"));
}

TEST_CASE("decoder-only patching grids name their rows", "[patching][encdec]") {
  const ModelConfig dec = preset_test::small_preset_config("tiny-decoder");
  const Model model(dec, init_params(dec, 3));
  const auto a = model.tokenize("abcd", "").first, b = model.tokenize("abce", "").first;
  PatchSpec spec = encdec_spec(PatchSite::Head, PatchDirection::Denoise);
  const PatchResult heads = activation_patching(model, a, b, spec, RunOptions{});
  spec.site = PatchSite::Resid;
  const PatchResult resid = activation_patching(model, a, b, spec, RunOptions{});
  REQUIRE(heads.row_names.size() == size_t(dec.n_layers));
  for (int64_t l = 0; l < dec.n_layers; ++l) {
    CHECK(heads.row_names[size_t(l)] == "decoder.layer" + std::to_string(l) + ".self_attn");
    CHECK(resid.row_names[size_t(l)] == "decoder.layer" + std::to_string(l));
  }
}
