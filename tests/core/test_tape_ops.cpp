// The training tape's form of every registered op that has one (tests/backend_ops/, TapeOp),
// over the op's shape table: the tape's forward in double against the op's host reference
// under the op's tolerance rule, and its backward against central finite differences in double
// precision (tests/core/finite_differences.h: relative agreement 1e-6). Shapes that the tape
// op cannot express (the case returns no tape form, e.g. a causal offset) are left out; shapes
// whose inputs exceed kMaxGradInputs values or sit on a kink (a zero row of scale_norm) get
// the forward comparison only. At least one shape per op has its gradient checked.
#include <catch2/catch.hpp>

#include "core/backend/op_registry.h"
#include "core/tensor/random.h"
#include "tests/backend_ops/compare.h"
#include "tests/backend_ops/op_case.h"
#include "tests/core/finite_differences.h"

using namespace atlas;
using namespace atlas::train;

namespace {

constexpr Eigen::Index kMaxGradInputs = 12000;

}  // namespace

TEST_CASE("every op's tape form matches its host reference and finite differences", "[backend-ops][train][grad]") {
  for (const op_test::OpCase* c : op_test::op_cases()) {
    if (!c->has_tape) continue;
    DYNAMIC_SECTION(c->op.name()) {
      int checked = 0;
      for (size_t s = 0; s < c->shapes; ++s) {
        const op_test::OpInstance in = c->make(s);
        const std::string where = c->op.name() + " [" + in.shape + "] on the tape";
        INFO(where);
        std::optional<op_test::TapeOp> t = in.tape();
        if (!t) continue;
        // Forward: the first output, in double, against the reference.
        Tape<double> tape;
        const MatT<double>& y = tape.value(t->record(tape, t->params));
        const op_test::Want want = in.reference().at(0);
        std::vector<float> got(size_t(y.size()));
        for (Eigen::Index i = 0; i < y.size(); ++i) got[size_t(i)] = float(y.data()[i]);
        CHECK(y.size() == Eigen::Index(want.data.size()));
        if (y.size() == Eigen::Index(want.data.size()))
          op_test::require_close(got, want.data, in.tolerance(0, want.data), where + ": " + c->outputs[0]);

        Eigen::Index inputs = 0;
        for (const auto& [name, m] : t->params) inputs += m.size();
        if (inputs > kMaxGradInputs || !t->differentiable) continue;
        // Backward: loss = sum(out .* R) for a fixed random R, so every output has its weight.
        MatT<double> weights;
        const auto loss = [&](const ParamsT<double>& p, ParamsT<double>* grads) {
          Tape<double> tp;
          const int out = t->record(tp, p);
          const MatT<double>& v = tp.value(out);
          if (weights.size() == 0) {
            Rng rng(99);
            weights = fd::random_mat(rng, v.rows(), v.cols());
          }
          if (grads) tp.backward(out, weights, *grads);
          return v.cwiseProduct(weights).sum();
        };
        CHECK(fd::check_gradients(t->params, loss) > 0);
        ++checked;
      }
      CHECK(checked > 0);
    }
  }
}
