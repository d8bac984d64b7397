#pragma once
// The test description of a backend op, registered once per op id (core/backend/op_registry.h)
// by the op's file in this folder (the shape of ggml's test-backend-ops and ncnn's test_layer):
// a shape table (sizes straddling the Vulkan workgroups and tiles of 64 and 128, odd sizes,
// 1), a seeded input generator per shape, run() that calls the op on a backend and downloads
// every output, the host reference it is compared against, a tolerance rule per output, and
// where the training tape has the op, its tape form for the finite-difference gradient check.
// The harness (harness.h) runs every case on every backend (tests/gpu/test_backend_ops.cpp)
// and the tape forms (tests/core/test_tape_ops.cpp).
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/backend/module_op.h"
#include "core/tensor/tensor.h"
#include "core/train/train_tape.h"

namespace atlas::op_test {

// An output as the host reference computes it, in double.
struct Want {
  Shape shape;
  std::vector<double> data;
};
// An output the op must not produce (a trace not asked for): run() returns absent() for an
// empty handle, so a backend that fills it anyway fails the shape check.
inline Shape absent_shape() { return {-1}; }
inline Tensor absent() {
  Tensor t;
  t.shape = absent_shape();
  return t;
}
inline Tensor download_or_absent(Backend& be, const DTensor& t) {
  return t ? be.download(t) : absent();
}
inline Want want_of(const Tensor& t) { return {t.shape, std::vector<double>(t.data.begin(), t.data.end())}; }
inline Want want_absent() { return {absent_shape(), {}}; }
// The tape node of parameter `name`, for the tape forms.
inline int tape_param(train::Tape<double>& t, const train::ParamsT<double>& p, const char* name) {
  return t.param(name, p.at(name));
}

// The tape form of an op: its differentiable inputs as double parameters, and the op
// recorded on a tape over them (returns the node of the op's first output).
struct TapeOp {
  train::ParamsT<double> params;
  std::function<int(train::Tape<double>&, const train::ParamsT<double>&)> record;
  // false: the inputs sit on a kink a finite-difference probe would cross (the forward is
  // still compared).
  bool differentiable = true;
};

// Which op a case tests: a built-in op (op_registry.h) or a variant module's op
// (module_op.h).
struct OpKey {
  Op op = Op::Count;  // Count for a module op
  const ModuleOp* module = nullptr;
  OpKey(Op o) : op(o) {}                    // NOLINT: implicit on purpose
  OpKey(const ModuleOp& m) : module(&m) {}  // NOLINT: implicit on purpose
  std::string name() const { return module ? module->name : op_name(op); }
  bool supported_by(const Backend& be) const {
    return module ? be.supports_module_op(*module) : be.supports(op);
  }
  // The fallback line a backend without the op's kernel reports.
  std::string fallback_line() const {
    return module ? module_fallback_line(*module) : host_fallback_line(op);
  }
  // Base of the input seeds: the op id, or for a module op a hash of its name past them.
  uint32_t seed() const;
  bool operator==(const OpKey& o) const { return op == o.op && module == o.module; }
};

// One shape of one op with its inputs generated: what the harness runs.
struct OpInstance {
  std::string shape;  // names the case in failure messages
  std::function<std::vector<Tensor>(Backend&)> run;
  std::function<std::vector<Want>()> reference;
  std::function<std::vector<double>(size_t output, const std::vector<double>& want)> tolerance;
  std::function<std::optional<TapeOp>()> tape;  // empty: no tape form; nullopt: not this shape
};

struct OpCase {
  OpKey op = Op::Count;
  std::vector<std::string> outputs;  // names of run()'s outputs, in order
  size_t shapes = 0;
  std::function<OpInstance(size_t shape)> make;
  bool has_tape = false;
};

// Every registered case, built-in ops by id, then module ops by name.
std::vector<const OpCase*> op_cases();
// The case of `op`, or nullptr.
const OpCase* op_case(const OpKey& op);
// How many cases test `op` (a test requires exactly one per op with a backend method and per
// module op).
int registrations(const OpKey& op);

// An op file registers its case with a namespace-scope `const Register r(make_case(...));`.
struct Register {
  explicit Register(OpCase c);
};

// What an op file writes: the typed description, turned into an OpCase by make_case.
template <class ShapeT, class Inputs>
struct OpTest {
  OpKey op;
  std::vector<std::string> outputs;
  std::vector<ShapeT> shapes;
  std::function<std::string(const ShapeT&)> describe;
  std::function<Inputs(const ShapeT&, uint32_t seed)> generate;
  std::function<std::vector<Tensor>(Backend&, const Inputs&)> run;
  std::function<std::vector<Want>(const Inputs&)> reference;
  std::function<std::vector<double>(const Inputs&, size_t output, const std::vector<double>& want)>
      tolerance;
  std::function<std::optional<TapeOp>(const Inputs&)> tape;  // may be empty
};

template <class ShapeT, class Inputs>
OpCase make_case(OpTest<ShapeT, Inputs> t) {
  auto test = std::make_shared<const OpTest<ShapeT, Inputs>>(std::move(t));
  OpCase c;
  c.op = test->op;
  c.outputs = test->outputs;
  c.shapes = test->shapes.size();
  c.has_tape = static_cast<bool>(test->tape);
  c.make = [test](size_t i) {
    const ShapeT& s = test->shapes.at(i);
    // Seeded by op and shape, so a failure reproduces alone (-c <op name>).
    const uint32_t seed = test->op.seed() + 10u * static_cast<uint32_t>(i) + 1u;
    auto in = std::make_shared<const Inputs>(test->generate(s, seed));
    OpInstance inst;
    inst.shape = test->describe(s);
    inst.run = [test, in](Backend& be) { return test->run(be, *in); };
    inst.reference = [test, in] { return test->reference(*in); };
    inst.tolerance = [test, in](size_t o, const std::vector<double>& want) {
      return test->tolerance(*in, o, want);
    };
    if (test->tape) inst.tape = [test, in] { return test->tape(*in); };
    return inst;
  };
  return c;
}

// ---- helpers of the op files ----------------------------------------------------------

inline Tensor random_tensor(Shape shape, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  Tensor t(shape);
  for (float& x : t.data) x = dist(gen);
  return t;
}

inline std::vector<double> uniform_tol(size_t n, double tol) { return std::vector<double>(n, tol); }

// A host tensor as a double tape parameter: [shape[0], the rest] (1-D: one row [1, n]).
train::MatT<double> to_mat(const Tensor& t);
// "3x17x5": a shape table row in messages.
std::string dims(std::initializer_list<int64_t> values);

}  // namespace atlas::op_test
