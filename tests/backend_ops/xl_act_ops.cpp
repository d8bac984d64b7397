// Test cases of xl_attention and act_step (op_case.h). xl_attention: memory lengths, clamped
// distances, same_length, rows straddling the 64-wide workgroup, one case without traces;
// reference xl_attention_reference. Bounds against the exact value (inputs in [-1, 1],
// d_head <= 13): scores and terms 2e-6 + 2e-6 |want|, probabilities 2e-6, output 1e-5; the
// host reference is float too, so against it twice those. act_step: one step from a state
// where some positions have halted, with and without the last step, both update rules;
// reference act_step_reference; |err| <= 1e-6 against the exact value, 2e-6 against it.
#include <cmath>

#include "core/backend/op_registry.h"
#include "core/variants/transformer_xl/train_xl.h"
#include "core/variants/transformer_xl/xl_attention_op.h"
#include "core/variants/universal/act_step.h"
#include "tests/backend_ops/compare.h"
#include "tests/backend_ops/op_case.h"

namespace atlas::op_test {
namespace {

struct XlShape {
  int64_t lq, mem, heads, dh, mem_len, clamp_len;
  bool same_length;
  bool traced = true;
};
struct XlIn {
  Tensor q, k, v, rk, u, vb;
  XlAttentionArgs args;
};

const Register xl_case(make_case(OpTest<XlShape, XlIn>{
    xl_attention_op(),
    {"out", "probs", "scores", "term_a", "term_b", "term_c", "term_d"},
    {
        // lq mem  H  dh  mem_len clamp same_length
        {1, 0, 1, 1, 0, -1, false},
        {13, 0, 3, 5, 0, -1, false},
        {17, 17, 2, 7, 17, -1, false},
        {11, 79, 2, 13, 79, -1, false},
        {20, 20, 3, 4, 20, -1, true},
        {15, 30, 2, 6, 30, 9, false},
        {70, 19, 1, 8, 19, 5, true},
        {64, 65, 2, 8, 65, -1, false},
        {129, 0, 1, 4, 0, -1, false},
        {5, 4, 2, 3, 4, -1, false, false},  // no traces: out only
    },
    [](const XlShape& c) {
      std::string s = "lq " + std::to_string(c.lq) + " mem " + std::to_string(c.mem) + " H " +
                      std::to_string(c.heads) + " dh " + std::to_string(c.dh);
      if (c.clamp_len >= 0) s += " clamp " + std::to_string(c.clamp_len);
      if (c.same_length) s += " same_length";
      if (!c.traced) s += " untraced";
      return s;
    },
    [](const XlShape& c, uint32_t seed) {
      const int64_t lk = c.lq + c.mem, D = c.heads * c.dh;
      const int64_t rows = c.clamp_len >= 0 ? std::min(lk - 1, c.clamp_len) + 1 : lk;
      XlIn in{random_tensor({c.lq, D}, seed), random_tensor({lk, D}, seed + 1), random_tensor({lk, D}, seed + 2),
              random_tensor({rows, D}, seed + 3), random_tensor({c.heads, c.dh}, seed + 4),
              random_tensor({c.heads, c.dh}, seed + 5), {}};
      in.args.heads = int(c.heads);
      in.args.scale = float(1.0 / std::sqrt(double(c.dh)));
      in.args.mem_len = c.mem_len;
      in.args.same_length = c.same_length;
      in.args.clamp_len = c.clamp_len;
      in.args.want_probs = in.args.want_terms = c.traced;
      return in;
    },
    [](Backend& be, const XlIn& in) {
      const XlAttentionResult r =
          xl_attention(be, be.upload(in.q), be.upload(in.k), be.upload(in.v), be.upload(in.rk),
                       be.upload(in.u), be.upload(in.vb), in.args);
      std::vector<Tensor> out{be.download(r.out)};
      for (const DTensor* t : {&r.probs, &r.scores, &r.term_a, &r.term_b, &r.term_c, &r.term_d})
        out.push_back(download_or_absent(be, *t));
      return out;
    },
    [](const XlIn& in) {
      const XlAttentionHost h = xl_attention_reference(in.q, in.k, in.v, in.rk, in.u, in.vb, in.args);
      std::vector<Want> w(7, want_absent());
      w[0] = want_of(h.out);
      if (in.args.want_probs) w[1] = want_of(h.probs);
      if (in.args.want_terms) {
        w[2] = want_of(h.scores);
        w[3] = want_of(h.term_a), w[4] = want_of(h.term_b), w[5] = want_of(h.term_c), w[6] = want_of(h.term_d);
      }
      return w;
    },
    [](const XlIn&, size_t output, const std::vector<double>& want) {
      if (output == 0) return uniform_tol(want.size(), 2e-5);
      if (output == 1) return uniform_tol(want.size(), 4e-6);
      return rel_tol(want, 4e-6, 4e-6);
    },
    [](const XlIn& in) -> std::optional<TapeOp> {  // the tape's scale is 1 / sqrt(d_head), as here
      XLConfig x;
      x.mem_len = in.args.mem_len;
      x.same_length = in.args.same_length;
      x.clamp_len = in.args.clamp_len;
      const int heads = in.args.heads;
      return TapeOp{{{"q", to_mat(in.q)}, {"k", to_mat(in.k)}, {"v", to_mat(in.v)}, {"rk", to_mat(in.rk)},
                     {"u", to_mat(in.u)}, {"vb", to_mat(in.vb)}},
                    [x, heads](train::Tape<double>& t, const train::ParamsT<double>& p) {
                      auto P = [&](const char* n) { return t.param(n, p.at(n)); };
                      return train::xl_relative_attention(t, P("q"), P("k"), P("v"), P("rk"), P("u"), P("vb"), heads, x);
                    }};
    }}));

struct ActStepShape {
  int64_t L, d;
  bool interpolate, last_step;
};
struct ActStepIn {
  Tensor halting, y, state, logit, step_out;
  ActStepArgs args;
};

const Register act_case(make_case(OpTest<ActStepShape, ActStepIn>{
    act_step_op(),
    {"halting", "y", "state", "weights"},
    {{1, 1, true, false},
     {7, 13, true, false},
     {7, 13, false, false},
     {130, 13, true, true},
     {65, 64, false, false},
     {129, 0, true, false},
     {63, 1, false, true}},
    [](const ActStepShape& s) {
      return dims({s.L, s.d}) + (s.interpolate ? " interpolate" : " accumulate") + (s.last_step ? " last step" : "");
    },
    [](const ActStepShape& s, uint32_t seed) {
      ActStepIn in{Tensor({s.L, 4}),
                   random_tensor({s.L, s.d}, seed),
                   random_tensor({s.L, s.d}, seed + 1),
                   // Logits spread so that some positions halt at this step and some run on.
                   random_tensor({s.L, 1}, seed + 2, -4.0f, 1.5f),
                   random_tensor({s.L, s.d}, seed + 3),
                   {}};
      std::mt19937 gen(seed + 4);
      std::uniform_real_distribution<float> cum(0.0f, 0.9f);
      for (int64_t i = 0; i < s.L; ++i) {  // cum, remainder, steps, halted
        float* h = in.halting.data.data() + 4 * i;
        if (gen() % 4 == 0) {  // halted at an earlier step
          h[1] = cum(gen), h[0] = 1.0f, h[2] = 2.0f, h[3] = 1.0f;
        } else {
          h[0] = cum(gen), h[2] = 1.0f;
        }
      }
      in.args.interpolate = s.interpolate;
      in.args.last_step = s.last_step;
      return in;
    },
    [](Backend& be, const ActStepIn& in) {
      const ActStepResult r =
          act_step(be, {be.upload(in.halting), be.upload(in.y), be.upload(in.state)},
                   be.upload(in.logit), be.upload(in.step_out), in.args);
      return be.download_all({r.next.halting, r.next.y, r.next.state, r.weights});
    },
    [](const ActStepIn& in) {
      const ActStepHost h = act_step_reference(in.halting, in.y, in.state, in.logit, in.step_out, in.args);
      return std::vector<Want>{want_of(h.halting), want_of(h.y), want_of(h.state), want_of(h.weights)};
    },
    [](const ActStepIn&, size_t, const std::vector<double>& want) {
      return uniform_tol(want.size(), 2e-6);
    },
    {}}));

}  // namespace
}  // namespace atlas::op_test
