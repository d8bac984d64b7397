// Test case of the attention op (op_case.h): masks (causal with memory offsets, padding,
// patterns with empty rows, sliding windows, every key padded), odd lengths and lengths
// straddling the 64/128 tiles, no keys, no value dimensions. Reference: the naive oracle of
// naive_attention.h with its per-element bounds (this op's only other implementation is the
// CPU backend itself).
#include "core/backend/op_registry.h"
#include "tests/backend_ops/naive_attention.h"
#include "tests/backend_ops/op_case.h"

namespace atlas::op_test {
namespace {

using train::ParamsT;
using train::Tape;

struct AttentionIn {
  Tensor q, k, v;
  AttentionArgs args;
};

const Register attention_case(make_case(OpTest<AttentionCase, AttentionIn>{
    Op::Attention,
    {"out", "probs", "scores"},
    {
        // H  lq   lk  dh  dv  causal offset pad pattern probs scores scale   window
        {1, 1, 1, 1, 1, false, 0, 0, 0, true, true, 1.0f},
        {2, 3, 17, 4, 5, true, 14, 0, 0, true, false, 0.5f},     // causal with 14 memory keys
        {3, 17, 63, 8, 8, true, 0, 0, 0, true, true, 0.35f},
        {1, 65, 65, 16, 16, false, 0, 0, 0, false, false, 0.25f},
        {2, 63, 129, 7, 9, false, 0, 1, 0, true, true, 0.4f},    // padding keys
        {4, 17, 65, 32, 16, true, 3, 0, 1, true, false, 0.18f},  // causal + dense pattern
        {2, 20, 33, 8, 8, true, -5, 0, 0, true, true, 0.35f},    // first 5 rows see nothing
        {1, 9, 13, 4, 4, false, 0, 2, 0, true, true, 0.5f},      // every key is padding
        {2, 127, 129, 64, 64, false, 0, 1, 2, true, false, 0.125f},  // band + padding
        {3, 30, 70, 8, 12, false, 0, 0, 3, true, true, 0.35f},   // pattern with empty rows
        {8, 64, 64, 64, 64, true, 0, 0, 0, true, false, 0.125f}, // d 512, 8 heads
        {1, 5, 0, 4, 4, false, 0, 0, 0, true, true, 1.0f},       // no keys at all
        {2, 5, 9, 4, 0, true, 2, 0, 0, true, false, 1.0f},       // no value dims: probs only
        {2, 3, 200, 4, 3, false, 0, 0, 0, false, true, 3.0f},    // large scores, scores only
        {2, 29, 29, 8, 8, true, 0, 0, 0, true, false, 0.35f, 5}, // sliding window of 5 keys
        // Windows spanning several 64-key blocks, so whole blocks before a tile's windows are
        // skipped by the kernel: long rows, a cached prefix (offset), a pattern on top.
        {2, 200, 200, 8, 8, true, 0, 0, 0, true, true, 0.3f, 70},
        {1, 40, 300, 8, 6, true, 260, 0, 0, true, false, 0.3f, 100},
        {2, 65, 130, 8, 8, true, 65, 1, 1, true, true, 0.3f, 9},
        {2, 128, 128, 16, 16, true, 0, 1, 0, true, true, 0.25f}, // one full tile, causal + padding
        {1, 7, 7, 3, 3, false, 0, 1, 0, true, true, 0.6f},       // small enough to probe every entry
    },
    [](const AttentionCase& c) {
      std::string s = "H " + std::to_string(c.heads) + " " + dims({c.lq, c.lk}) + " dh " +
                      std::to_string(c.dh) + " dv " + std::to_string(c.dv);
      if (c.causal) s += " causal+" + std::to_string(c.offset);
      if (c.window) s += " window " + std::to_string(c.window);
      if (c.key_valid) s += c.key_valid == 2 ? " all padded" : " padding";
      if (c.allowed) s += " pattern " + std::to_string(c.allowed);
      return s;
    },
    [](const AttentionCase& c, uint32_t seed) {
      return AttentionIn{random_tensor({c.lq, c.heads * c.dh}, seed, -1.5f, 1.5f),
                         random_tensor({c.lk, c.heads * c.dh}, seed + 1, -1.5f, 1.5f),
                         random_tensor({c.lk, c.heads * c.dv}, seed + 2), attention_args(c, seed + 3)};
    },
    [](Backend& be, const AttentionIn& in) {
      const AttentionResult r = be.attention(be.upload(in.q), be.upload(in.k), be.upload(in.v), in.args);
      return std::vector<Tensor>{be.download(r.out), download_or_absent(be, r.probs),
                                 download_or_absent(be, r.scores)};
    },
    [](const AttentionIn& in) {
      const AttentionOracle o = attention_oracle(in.q, in.k, in.v, in.args);
      const int64_t H = in.args.heads, lq = in.q.shape[0], lk = in.k.shape[0], dv = in.v.shape[1] / H;
      std::vector<Want> w{{{lq, H * dv}, o.out}, want_absent(), want_absent()};
      if (in.args.want_probs) w[1] = {{H, lq, lk}, o.probs};
      if (in.args.want_scores) w[2] = {{H, lq, lk}, o.scores};
      return w;
    },
    // naive_attention.h's bounds: out per element, probs 1e-6 and exactly 0 where the mask
    // forbids the key, scores per element (-inf exact where masked).
    [](const AttentionIn& in, size_t output, const std::vector<double>& want) {
      const AttentionOracle o = attention_oracle(in.q, in.k, in.v, in.args);
      if (output == 0) return o.out_tol;
      if (output == 2) return o.score_tol;
      std::vector<double> tol(want.size(), 1e-6);
      for (size_t i = 0; i < tol.size(); ++i)
        if (std::isinf(o.scores[i])) tol[i] = 0.0;
      return tol;
    },
    [](const AttentionIn& in) -> std::optional<TapeOp> {
      // The tape's attention knows causal without offset or window, padding and per-head
      // patterns; other masks and empty shapes have no tape form.
      const AttentionMask& m = in.args.mask;
      if ((m.causal && (m.causal_offset != 0 || m.window != 0)) || in.k.shape[0] == 0 || in.v.shape[1] == 0)
        return std::nullopt;
      train::AttentionSpec<double> spec;
      spec.heads = in.args.heads;
      spec.scale = in.args.scale;
      spec.causal = m.causal;
      spec.key_valid = m.key_valid;
      for (int h = 0; h < in.args.heads && !m.allowed.empty(); ++h)
        spec.head_allowed.insert(spec.head_allowed.end(), m.allowed.begin(), m.allowed.end());
      return TapeOp{{{"q", to_mat(in.q)}, {"k", to_mat(in.k)}, {"v", to_mat(in.v)}},
                    [spec](Tape<double>& t, const ParamsT<double>& p) {
                      return t.attention(t.param("q", p.at("q")), t.param("k", p.at("k")),
                                         t.param("v", p.at("v")), spec);
                    }};
    }}));

}  // namespace
}  // namespace atlas::op_test
