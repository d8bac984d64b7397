#pragma once
// One step of Adaptive Computation Time (Graves 2016) across the steps of a Universal
// Transformer (core/variants/universal/universal.cpp), a module op (core/backend/module_op.h)
// whose Vulkan kernel is gpu/variants/universal/vk_act_step.cpp. One step, for every position i
// that has not halted, with h_i = sigmoid(logit_i):
//   n_i += 1;  if cum_i + h_i >= threshold or last step: w_i = R_i = 1 - cum_i, cum_i = 1, halt
//              else w_i = h_i, cum_i += h_i
//   y_i = w_i t_i + (1 - w_i) y_i (interpolate) or y_i + w_i t_i (accumulate);  state_i = t_i
// Halted positions keep y_i and state_i; their h and w of this step are 0.
#include "core/backend/backend.h"
#include "core/tensor/tensor.h"

namespace atlas {

struct ModuleOp;

struct ActState {
  DTensor halting;  // [L, 4]: cum, remainder R, steps N, halted (0 / 1)
  DTensor y;        // [L, d] ACT output so far
  DTensor state;    // [L, d] each position's latest step output (the next step's input)
};

struct ActStepArgs {
  float threshold = 0.99f;  // 1 - epsilon
  bool last_step = false;   // every running position halts (N = max_steps)
  bool interpolate = true;  // ActUpdate::Interpolate; false: accumulate
};

struct ActStepResult {
  ActState next;
  DTensor weights;  // [L, 2]: h_i and w_i of this step (0 for positions halted before it)
};

// One step on `be`: logit [L, 1] the halting unit's output for this step's input, step_out
// [L, d] the shared block's output (shapes checked first, the same message on every backend).
ActStepResult act_step(Backend& be, const ActState& current, const DTensor& logit,
                       const DTensor& step_out, const ActStepArgs& args);

// The backend op "act_step": inputs {halting, y, state, logit, step_out}, outputs {halting, y,
// state, weights} of the next step.
const ModuleOp& act_step_op();

// Host reference: what the CPU backend runs, what a backend without the kernel falls back to,
// and what the kernel is tested against.
struct ActStepHost {
  Tensor halting, y, state, weights;  // as ActStepResult
};
ActStepHost act_step_reference(const Tensor& halting, const Tensor& y, const Tensor& state,
                               const Tensor& logit, const Tensor& step_out,
                               const ActStepArgs& args);
// Throws AtlasError naming the mismatch (shared with the device kernel).
void check_act_step_shapes(const Shape& halting, const Shape& y, const Shape& state,
                           const Shape& logit, const Shape& step_out);

}  // namespace atlas
