// Neural Turing Machine addressing (core/variants/ntm/ntm.h) against examples worked by hand from seed 004's
// equations, and the model path (core/variants/ntm/ntm_model.cpp) against a naive loop re-deriving every
// traced stage from the traced controller outputs.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/config/config.h"
#include "core/tensor/error.h"
#include "core/model/model.h"
#include "core/variants/ntm/ntm.h"
#include "core/model/params.h"
#include "core/model/presets.h"

using namespace atlas;
using Catch::Matchers::Contains;

namespace {

RowVec row(std::initializer_list<float> v) {
  RowVec r(static_cast<int64_t>(v.size()));
  int64_t i = 0;
  for (float x : v) r[i++] = x;
  return r;
}

Mat mat(std::initializer_list<std::initializer_list<float>> rows) {
  Mat m(static_cast<int64_t>(rows.size()), static_cast<int64_t>(rows.begin()->size()));
  int64_t i = 0;
  for (const auto& r : rows) m.row(i++) = row(r);
  return m;
}

void require_near(const RowVec& got, std::initializer_list<double> want, double eps = 1e-6) {
  REQUIRE(got.size() == static_cast<int64_t>(want.size()));
  int64_t i = 0;
  for (double w : want) {
    INFO("entry " << i);
    REQUIRE(got[i] == Approx(w).margin(eps));
    ++i;
  }
}

NtmHeadControls read_controls(RowVec key, float beta, float gate, RowVec shift, float gamma) {
  NtmHeadControls c;
  c.key = key;
  c.beta = beta;
  c.gate = gate;
  c.shift = shift;
  c.gamma = gamma;
  return c;
}

}  // namespace

TEST_CASE("NTM content addressing: a one-hot match with large beta selects that row", "[ntm]") {
  const Mat memory = mat({{1, 0}, {0, 1}, {-1, 0}});
  const RowVec w = ntm_content_weights(memory, row({0, 1}), 100.0f);
  require_near(w, {0, 1, 0});
}

TEST_CASE("NTM content addressing by hand: softmax of beta times cosine", "[ntm]") {
  // cos = 1, 0, 1/sqrt(2); exp(.) / sum, evaluated by hand.
  const Mat memory = mat({{1, 0}, {0, 1}, {1, 1}});
  require_near(ntm_content_weights(memory, row({1, 0}), 1.0f),
               {0.47304109310346387, 0.17402209298203053, 0.35293681391450554});
  // beta = 0 ignores the key: uniform; an all-zero row scores cosine 0, not NaN.
  require_near(ntm_content_weights(mat({{0, 0}, {2, 0}}), row({1, 0}), 0.0f), {0.5, 0.5});
}

TEST_CASE("NTM interpolation by hand", "[ntm]") {
  require_near(ntm_interpolate(row({0.5f, 0.3f, 0.2f}), row({0, 0, 1}), 0.25f), {0.125, 0.075, 0.8});
}

TEST_CASE("NTM shift of +1 with g = 0 rotates the previous weights by one", "[ntm]") {
  const Mat memory = mat({{1, 0}, {0, 1}, {1, 1}});
  const RowVec previous = row({0.1f, 0.2f, 0.7f});
  const NtmAddressing a =
      ntm_address(memory, read_controls(row({1, 0}), 5.0f, 0.0f, row({0, 0, 1}), 1.0f), previous);
  require_near(a.gated, {0.1, 0.2, 0.7});
  require_near(a.shifted, {0.7, 0.1, 0.2});
  require_near(a.sharpened, {0.7, 0.1, 0.2});
  // A shift of -1 rotates the other way.
  require_near(ntm_shift(previous, row({1, 0, 0})), {0.2, 0.7, 0.1});
}

TEST_CASE("NTM circular convolution spreads over neighbours and wraps", "[ntm]") {
  require_near(ntm_shift(row({1, 0, 0, 0}), row({0.25f, 0.5f, 0.25f})), {0.5, 0.25, 0, 0.25});
  // Range 2 (offsets -2..2): all weight on +2 moves slot 3 to slot 0 (mod 5).
  require_near(ntm_shift(row({0, 0, 0, 1, 0}), row({0, 0, 0, 0, 1})), {1, 0, 0, 0, 0});
  require_near(ntm_shift(row({0, 0, 0, 0, 1}), row({0, 0, 0, 0, 1})), {0, 1, 0, 0, 0});
}

TEST_CASE("NTM sharpening: gamma = 1 leaves weights unchanged, gamma = 2 by hand", "[ntm]") {
  require_near(ntm_sharpen(row({0.5f, 0.25f, 0, 0.25f}), 1.0f), {0.5, 0.25, 0, 0.25});
  // squares 0.25, 0.0625, 0, 0.0625; sum 0.375
  require_near(ntm_sharpen(row({0.5f, 0.25f, 0, 0.25f}), 2.0f), {2.0 / 3, 1.0 / 6, 0, 1.0 / 6});
}

TEST_CASE("NTM read, erase and add by hand", "[ntm]") {
  const Mat m0 = mat({{1, 2}, {3, 4}, {5, 6}});
  require_near(ntm_read(m0, row({0.2f, 0.3f, 0.5f})), {3.6, 4.6});

  Mat erased = m0;  // e = 1 with weight 1 clears the row
  ntm_write(erased, row({0, 1, 0}), row({1, 1}), row({0, 0}));
  require_near(erased.row(0), {1, 2});
  require_near(erased.row(1), {0, 0});
  require_near(erased.row(2), {5, 6});

  Mat added = m0;
  ntm_write(added, row({0.5f, 0.5f, 0}), row({0, 0}), row({2, -2}));
  require_near(added.row(0), {2, 1});
  require_near(added.row(1), {4, 3});
  require_near(added.row(2), {5, 6});

  Mat both = m0;  // M(i) (1 - w e) + w a
  ntm_write(both, row({0.5f, 0, 0.5f}), row({1, 0}), row({1, 1}));
  require_near(both.row(0), {1.0, 2.5});
  require_near(both.row(1), {3, 4});
  require_near(both.row(2), {3.0, 6.5});
}

TEST_CASE("NTM 3-slot example, two steps, worked fully by hand (manual JSON mode)", "[ntm]") {
  // Step 0: write0 ignores content (g = 0), shifts w_0 = [1,0,0] by +1 to [0,1,0], erases row 1
  // and adds [0.5, 0.5]. read0: beta = ln 2 makes content [0.5, 0.25, 0.25]; gamma 2 ->
  // [2/3, 1/6, 1/6]; reads M_0: [2/3, 1/6].
  // Step 1: write0 shifts [0,1,0] to [0,0,1], erase 0.5 of a zero row, add [1, -1].
  // read0: beta 0 -> uniform; g 0.5 with [2/3,1/6,1/6] -> [0.5,0.25,0.25]; shift -1 ->
  // [0.25, 0.25, 0.5]; reads M_1 = [[1,0],[0.5,0.5],[0,0]]: [0.375, 0.125].
  const std::string json = R"({
    "memory": [[1, 0], [0, 1], [0, 0]],
    "heads": [{"name": "read0"}, {"name": "write0", "write": true}],
    "steps": [
      {"read0": {"key": [1, 0], "beta": 0.6931471805599453, "gate": 1, "shift": [0, 1, 0], "gamma": 2},
       "write0": {"key": [0, 1], "beta": 0, "gate": 0, "shift": [0, 0, 1], "gamma": 1,
                  "erase": [1, 1], "add": [0.5, 0.5]}},
      {"read0": {"key": [1, 1], "beta": 0, "gate": 0.5, "shift": [1, 0, 0], "gamma": 1},
       "write0": {"key": [0, 1], "beta": 0, "gate": 0, "shift": [0, 0, 1], "gamma": 1,
                  "erase": [0.5, 0.5], "add": [1, -1]}}]})";
  const NtmRun run = ntm_run_from_json(json, "hand.json");
  REQUIRE(run.steps.size() == 2);
  REQUIRE(run.memory.size() == 3);
  const NtmStep& s0 = run.steps[0];
  require_near(s0.addressing[0].content, {0.5, 0.25, 0.25});
  require_near(s0.addressing[0].sharpened, {2.0 / 3, 1.0 / 6, 1.0 / 6});
  require_near(s0.reads[0], {2.0 / 3, 1.0 / 6});
  require_near(s0.addressing[1].content, {1.0 / 3, 1.0 / 3, 1.0 / 3});
  require_near(s0.addressing[1].gated, {1, 0, 0});
  require_near(s0.addressing[1].sharpened, {0, 1, 0});
  require_near(run.memory[1].row(1), {0.5, 0.5});
  const NtmStep& s1 = run.steps[1];
  require_near(s1.addressing[0].gated, {0.5, 0.25, 0.25});
  require_near(s1.addressing[0].shifted, {0.25, 0.25, 0.5});
  require_near(s1.reads[0], {0.375, 0.125});
  require_near(s1.addressing[1].sharpened, {0, 0, 1});
  require_near(run.memory[2].row(0), {1, 0});
  require_near(run.memory[2].row(1), {0.5, 0.5});
  require_near(run.memory[2].row(2), {1, -1});

  Trace trace;
  trace_ntm_run(run, trace);
  REQUIRE(trace.find("ntm.memory")->tensor.shape == Shape{3, 3, 2});
  REQUIRE(trace.find("ntm.step1.read0.shifted")->tensor.data[2] == Approx(0.5));
  REQUIRE(trace.find("ntm.read0.weights")->tensor.shape == Shape{2, 3});
  REQUIRE(trace.find("ntm.write0.weights")->tensor.data[3 + 2] == Approx(1.0));
  REQUIRE(trace.find("ntm.read0.reads")->tensor.data[2] == Approx(0.375));
}

TEST_CASE("NTM manual controls: bad values name the step, head and key", "[ntm]") {
  const std::string base = R"({"memory": [[1, 0], [0, 1], [0, 0]], "heads": [{"name": "read0"}],
    "steps": [{"read0": {"key": [1, 0], "gate": GATE, "shift": SHIFT}}]})";
  auto with = [&](const std::string& gate, const std::string& shift) {
    std::string s = base;
    s.replace(s.find("GATE"), 4, gate);
    s.replace(s.find("SHIFT"), 5, shift);
    return s;
  };
  REQUIRE_NOTHROW(ntm_run_from_json(with("1", "[0, 1, 0]"), "c.json"));
  REQUIRE_THROWS_WITH(ntm_run_from_json(with("1.5", "[0, 1, 0]"), "c.json"),
                      Contains("c.json") && Contains("step 0, head read0") && Contains("gate"));
  REQUIRE_THROWS_WITH(ntm_run_from_json(with("1", "[0.5, 0.4, 0]"), "c.json"), Contains("shift must sum to 1"));
  REQUIRE_THROWS_WITH(ntm_run_from_json(with("1", "[0, 1]"), "c.json"), Contains("odd number"));
  REQUIRE_THROWS_WITH(ntm_run_from_json(R"({"memory": [[1]], "heads": [{"name": "r"}], "step": []})", "c.json"),
                      Contains("unknown key \"step\""));
  REQUIRE_THROWS_WITH(ntm_run_from_json("{", "c.json"), Contains("not valid JSON"));
}

TEST_CASE("NTM config errors name the key", "[ntm]") {
  const std::string head = R"({"name": "n", "architecture": "decoder", "ntm": )";
  REQUIRE_THROWS_WITH(parse_config(head + R"({"enabled": true, "memory_slot": 4}})", "x.json"),
                      Contains("memory_slot") && Contains("memory_slots"));
  REQUIRE_THROWS_WITH(parse_config(head + R"({"enabled": true, "memory_slots": 4, "shift_range": 2}})", "x.json"),
                      Contains("ntm.shift_range"));
  REQUIRE_THROWS_WITH(parse_config(head + R"({"read_heads": 0}})", "x.json"), Contains("ntm.read_heads"));
  REQUIRE_THROWS_WITH(
      parse_config(R"({"name": "n", "architecture": "encoder", "ntm": {"enabled": true}})", "x.json"),
      Contains("ntm.enabled") && Contains("decoder"));
  const ModelConfig c = preset_config("ntm-small");
  const ModelConfig again = parse_config(config_to_json(c), "round-trip");
  REQUIRE(again.ntm());
  REQUIRE(again.ntm()->memory_slots == c.ntm()->memory_slots);
  REQUIRE(again.ntm()->shift_range == 1);
}

TEST_CASE("NTM model (preset ntm-small): every traced stage follows the equations", "[ntm]") {
  const ModelConfig c = preset_config("ntm-small");
  Model model(c, init_params(c, c.seed));
  const RunResult r = model.run("copy me", "", RunOptions{});
  const int64_t T = 7, N = c.ntm()->memory_slots, M = c.ntm()->memory_width;
  REQUIRE(r.is_logits);
  REQUIRE(r.output.shape == Shape{T, 256});
  const Tensor& mem = r.trace.find("ntm.memory")->tensor;
  REQUIRE(mem.shape == Shape{T + 1, N, M});
  auto memory_at = [&](int64_t t, int64_t i, int64_t j) { return double(mem.data[size_t((t * N + i) * M + j)]); };
  // Naive oracle: loops over the traced controls, the traced memory and the previous weights.
  for (const std::string head : {"read0", "write0"}) {
    const float* key = r.trace.find("ntm." + head + ".key")->tensor.data.data();
    const float* beta = r.trace.find("ntm." + head + ".beta")->tensor.data.data();
    const float* gate = r.trace.find("ntm." + head + ".gate")->tensor.data.data();
    const float* shift = r.trace.find("ntm." + head + ".shift")->tensor.data.data();
    const float* gamma = r.trace.find("ntm." + head + ".gamma")->tensor.data.data();
    std::vector<double> prev(size_t(N), 0.0);
    prev[0] = 1.0;
    for (int64_t t = 0; t < T; ++t) {
      INFO(head << " step " << t);
      REQUIRE(gamma[t] >= 1.0f);
      const size_t n = static_cast<size_t>(N);
      std::vector<double> content(n), gated(n), shifted(n, 0.0), sharp(n);
      double z = 0, kn = 0;
      for (int64_t j = 0; j < M; ++j) kn += double(key[t * M + j]) * key[t * M + j];
      for (int64_t i = 0; i < N; ++i) {
        double dot = 0, mn = 0;
        for (int64_t j = 0; j < M; ++j) {
          dot += key[t * M + j] * memory_at(t, i, j);
          mn += memory_at(t, i, j) * memory_at(t, i, j);
        }
        z += content[size_t(i)] = std::exp(beta[t] * dot / std::sqrt(kn * mn));
      }
      for (int64_t i = 0; i < N; ++i) {
        content[size_t(i)] /= z;
        gated[size_t(i)] = gate[t] * content[size_t(i)] + (1 - gate[t]) * prev[size_t(i)];
      }
      for (int64_t i = 0; i < N; ++i)
        for (int64_t o = -1; o <= 1; ++o) shifted[size_t(i)] += gated[size_t((i - o + N) % N)] * shift[t * 3 + o + 1];
      double zs = 0;
      for (int64_t i = 0; i < N; ++i) zs += sharp[size_t(i)] = std::pow(shifted[size_t(i)], double(gamma[t]));
      const std::string p = "ntm.step" + std::to_string(t) + "." + head;
      for (int64_t i = 0; i < N; ++i) {
        sharp[size_t(i)] /= zs;
        REQUIRE(r.trace.find(p + ".content")->tensor.data[size_t(i)] == Approx(content[size_t(i)]).margin(1e-5));
        REQUIRE(r.trace.find(p + ".gated")->tensor.data[size_t(i)] == Approx(gated[size_t(i)]).margin(1e-5));
        REQUIRE(r.trace.find(p + ".shifted")->tensor.data[size_t(i)] == Approx(shifted[size_t(i)]).margin(1e-5));
        REQUIRE(r.trace.find(p + ".sharpened")->tensor.data[size_t(i)] == Approx(sharp[size_t(i)]).margin(1e-5));
      }
      prev = sharp;
    }
  }
  // The memory after each step is M(i) (1 - w e) + w a with the traced write weights.
  const float* w = r.trace.find("ntm.write0.weights")->tensor.data.data();
  const float* e = r.trace.find("ntm.write0.erase")->tensor.data.data();
  const float* a = r.trace.find("ntm.write0.add")->tensor.data.data();
  for (int64_t t = 0; t < T; ++t)
    for (int64_t i = 0; i < N; ++i)
      for (int64_t j = 0; j < M; ++j)
        REQUIRE(memory_at(t + 1, i, j) ==
                Approx(memory_at(t, i, j) * (1 - w[t * N + i] * e[t * M + j]) + w[t * N + i] * a[t * M + j])
                    .margin(1e-5));
}
