// The act_step module op (act_step.h): its host reference and its call on a backend.
#include <cmath>

#include "core/backend/module_op.h"
#include "core/tensor/error.h"
#include "core/tensor/sigmoid.h"
#include "core/variants/universal/act_step.h"

namespace atlas {

void check_act_step_shapes(const Shape& halting, const Shape& y, const Shape& state,
                           const Shape& logit, const Shape& step_out) {
  if (y.size() != 2) throw AtlasError("act_step: the ACT output must be [L, d], got " + shape_str(y));
  const int64_t L = y[0];
  auto need = [&](const Shape& got, const Shape& want, const char* what) {
    if (got != want)
      throw AtlasError(std::string("act_step: ") + what + " must be " + shape_str(want) + ", got " +
                       shape_str(got));
  };
  need(halting, {L, 4}, "the halting state");
  need(state, y, "the step input state");
  need(logit, {L, 1}, "the halting logits");
  need(step_out, y, "the step output");
}

ActStepHost act_step_reference(const Tensor& halting, const Tensor& y, const Tensor& state,
                               const Tensor& logit, const Tensor& step_out, const ActStepArgs& args) {
  check_act_step_shapes(halting.shape, y.shape, state.shape, logit.shape, step_out.shape);
  const int64_t L = y.shape[0], d = y.shape[1];
  ActStepHost r{halting, y, state, Tensor({L, 2})};
  for (int64_t i = 0; i < L; ++i) {
    float* hs = r.halting.data.data() + 4 * i;  // cum, remainder, steps, halted
    if (hs[3] != 0.0f) continue;                // halted earlier: carried forward unchanged
    const float p = sigmoid(logit.data[size_t(i)]);
    float w;
    hs[2] += 1.0f;
    if (hs[0] + p >= args.threshold || args.last_step) {
      w = hs[1] = 1.0f - hs[0];
      hs[0] = 1.0f;
      hs[3] = 1.0f;
    } else {
      w = p;
      hs[0] += p;
    }
    r.weights.data[size_t(2 * i)] = p;
    r.weights.data[size_t(2 * i + 1)] = w;
    for (int64_t c = 0; c < d; ++c) {
      const size_t o = size_t(i * d + c);
      const float t = step_out.data[o];
      r.y.data[o] = args.interpolate ? w * t + (1.0f - w) * r.y.data[o] : r.y.data[o] + w * t;
      r.state.data[o] = t;
    }
  }
  return r;
}

namespace {

std::vector<Tensor> act_step_on_host(const std::vector<Tensor>& in, const ActStepArgs& args) {
  ActStepHost h = act_step_reference(in.at(0), in.at(1), in.at(2), in.at(3), in.at(4), args);
  return {std::move(h.halting), std::move(h.y), std::move(h.state), std::move(h.weights)};
}

bool uses_act(const ModelConfig& c) { return c.universal() && c.universal()->act; }

constexpr ModuleOpOf<ActStepArgs> kActStep = module_op<ActStepArgs, act_step_on_host>(
    "act_step",
    "ACT halting (halting probabilities, weighted state update) computed on the host; the "
    "per-step block runs on the backend",
    uses_act);
const RegisterModuleOp kRegisterActStep(kActStep.op);

}  // namespace

const ModuleOp& act_step_op() { return kActStep.op; }

ActStepResult act_step(Backend& be, const ActState& current, const DTensor& logit,
                       const DTensor& step_out, const ActStepArgs& args) {
  check_act_step_shapes(current.halting.shape, current.y.shape, current.state.shape, logit.shape,
                        step_out.shape);
  const std::vector<DTensor> out =
      run_op(be, kActStep, {current.halting, current.y, current.state, logit, step_out}, args);
  return {{out.at(0), out.at(1), out.at(2)}, out.at(3)};
}

}  // namespace atlas
