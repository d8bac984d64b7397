// Test case of the rope op (op_case.h): both pairings, with and without a pass-through tail,
// lengths and head widths straddling the 64-wide workgroups. Reference: rope_reference
// (core/variants/rotary/rope.h). Each output is a two-term sum of inputs in [-1, 1] with
// |cos|, |sin| <= 1: |err| <= 4 u.
#include "core/config/config.h"
#include "core/variants/rotary/rope.h"
#include "core/variants/rotary/train_rope.h"
#include "tests/backend_ops/compare.h"
#include "tests/backend_ops/op_case.h"

namespace atlas::op_test {
namespace {

struct RopeShape {
  int64_t L;
  int heads;
  int64_t d_head, rotary;
  bool adjacent;
};
struct RopeIn {
  Tensor x, table;
  RopeArgs args;
};

const Register rope_case(make_case(OpTest<RopeShape, RopeIn>{
    rope_op(),
    {"rotated"},
    {{1, 4, 2, 2, false},
     {37, 3, 10, 10, false},
     {37, 3, 10, 6, false},
     {5, 2, 8, 8, true},
     {129, 1, 6, 4, true},
     {65, 2, 64, 64, false},
     {63, 1, 128, 96, true}},
    [](const RopeShape& s) {
      return "L " + std::to_string(s.L) + " heads " + std::to_string(s.heads) + " d_head " +
             std::to_string(s.d_head) + " r " + std::to_string(s.rotary) + (s.adjacent ? " adjacent" : " half");
    },
    [](const RopeShape& s, uint32_t seed) {
      ModelConfig c;
      c.d_model = s.heads * s.d_head;
      c.n_heads = s.heads;
      c.rope.rotary_dims = s.rotary;
      c.rope.pairing = s.adjacent ? RopePairing::Adjacent : RopePairing::Half;
      return RopeIn{random_tensor({s.L, s.heads * s.d_head}, seed), rope_table(rope_frequencies(c, s.L), 0, s.L),
                    rope_args(c)};
    },
    [](Backend& be, const RopeIn& in) {
      return std::vector<Tensor>{
          be.download(apply_rope(be, be.upload(in.x), be.upload(in.table), in.args))};
    },
    [](const RopeIn& in) {
      return std::vector<Want>{want_of(rope_reference(in.x, in.table, in.args))};
    },
    [](const RopeIn&, size_t, const std::vector<double>& want) {
      return uniform_tol(want.size(), 4 * kU);
    },
    [](const RopeIn& in) -> std::optional<TapeOp> {
      const Tensor table = in.table;
      const RopeArgs args = in.args;
      return TapeOp{{{"x", to_mat(in.x)}}, [table, args](train::Tape<double>& t, const train::ParamsT<double>& p) {
                      return train::rope(t, t.param("x", p.at("x")), table, args);
                    }};
    }}));

}  // namespace
}  // namespace atlas::op_test
