// Universal Transformer (Dehghani et al. 2019) with Adaptive Computation Time (Graves 2016),
// seed 000 "Make it Recurrent" and "Adaptive Computation Time"; REFERENCES.md for
// tensor2tensor's universal_transformer_util:
//   step n = 1..M:  S^n = H^(n-1) + P_pos + P_time(n)         (position + time signal)
//                   T^n = Block(S^n)                          (one shared attention + FFN block)
//   ACT halting:    h^n = sigmoid(w . S^n + b)  (b init 1.0)
//                   N(t) = min(min{n' : sum_{n<=n'} h^n >= 1 - eps}, M)
//                   p^n = h^n for n < N(t),  R(t) = 1 - sum_{n<N(t)} h^n at n = N(t)
//   state update:   interpolate (tensor2tensor): y = p T^n + (1 - p) y  (y starts at 0)
//                   weighted_sum (Graves):       y = y + p T^n
//   ponder cost:    rho(t) = N(t) + R(t)
// A position that halted is copied forward unchanged (it takes no more updates), so later
// steps of running positions attend to its state at halting. Differences from tensor2tensor:
// positions still running at step M halt there with their remainder (the seed's N(t) <= M;
// tensor2tensor leaves their weights summing to less than 1) and the threshold test is
// sum >= 1 - eps (tensor2tensor: >).
#include "core/variants/universal/universal.h"
#include "core/variants/universal/act_arrays.h"

#include "core/model/model_arrays.h"
#include "core/model/trace.h"  // append_trace_row
#include "core/variants/universal/act_step.h"
#include "core/variants/universal/universal_stack.h"

namespace atlas {

namespace {

std::string stack_of(const ModelConfig& c) {
  return c.architecture == Architecture::Decoder ? "decoder" : "encoder";
}

}  // namespace

void append_universal_specs(std::vector<ParamSpec>& specs, const ModelConfig& c) {
  const std::string stack = stack_of(c), pre = stack + ".universal";
  // The shared block replaces the per-layer blocks param_specs listed.
  std::vector<ParamSpec> kept;
  for (auto& s : specs)
    if (s.name.rfind(stack + ".layer", 0) != 0) kept.push_back(std::move(s));
  specs = std::move(kept);
  ModelConfig one = c;  // the vanilla list of a one-layer model gives the block's tensors
  one.stack = StandardStack{};
  one.n_layers = 1;
  std::vector<ParamSpec> block = param_specs(one);
  for (auto& s : block)
    if (s.name.rfind(stack + ".layer0.", 0) == 0) {
      s.name = pre + s.name.substr(stack.size() + 7);
      specs.push_back(std::move(s));
    }
  if (c.universal()->act) {
    specs.push_back({pre + ".halt.w", {1, c.d_model}});
    specs.push_back({pre + ".halt.b", {1}, InitKind::Constant, c.universal()->halting_bias_init});
  }
}

namespace {

// The Universal Transformer's executor on the Backend (universal_stack.h): ACT through the
// act_step module op (act_step.h), whose halting state stays on the backend; one small download
// per step decides whether any position still runs and fills the per-step trace rows.
class UniversalBackendExecutor : public BackendExecutor {
 public:
  using ActRun = ActState;
  explicit UniversalBackendExecutor(ForwardPass& pass)
      : BackendExecutor(pass), u_(*pass.config().universal()) {}

  void trace_position_signal(const Tensor& positions) {
    if (pass_.options().trace.positional)
      pass_.trace().add(model_arrays::kPositional, "position signal added at every step [L, d]", positions);
  }
  ActState act_begin(const DTensor& state) {
    const int64_t L = state.shape[0], d = state.shape[1];
    return {be_.upload(Tensor({L, 4})), be_.upload(Tensor({L, d})), state};
  }
  static DTensor act_state(const ActState& act) { return act.state; }
  bool act_step(ActState& act, const DTensor& logit, const DTensor& step_out, bool last);
  DTensor act_output(const ActState& act);
  void universal_step_done(const std::string& stack, int64_t n, const DTensor& state) {
    if (pass_.options().trace.hidden)
      pass_.trace_later(stack + ".step" + std::to_string(n) + ".hidden", "state after the step [L, d]", state);
    pass_.step("universal step " + std::to_string(n));
  }

 private:
  const UniversalConfig& u_;
};

bool UniversalBackendExecutor::act_step(ActState& act, const DTensor& logit,
                                        const DTensor& step_out, bool last) {
  ActStepArgs args;
  args.threshold = 1.0f - u_.epsilon;
  args.interpolate = u_.update == ActUpdate::Interpolate;
  args.last_step = last;
  const ActStepResult r = atlas::act_step(be_, act, logit, step_out, args);
  act = r.next;
  const std::vector<Tensor> host = be_.download_all({r.weights, act.halting});
  const int64_t L = act.y.shape[0];
  std::vector<float> p(static_cast<size_t>(L)), w(static_cast<size_t>(L));
  bool any_running = false;
  for (size_t i = 0; i < size_t(L); ++i) {
    p[i] = host[0].data[2 * i];
    w[i] = host[0].data[2 * i + 1];
    any_running |= host[1].data[4 * i + 3] == 0.0f;
  }
  Trace& trace = pass_.trace();
  append_trace_row(trace, act_arrays::kHalting, "halting probability h per step and position (0 once halted) [steps, L]", p, {L});
  append_trace_row(trace, act_arrays::kWeights, "update weight p (h, or the remainder R at the halting step) [steps, L]", w, {L});
  return any_running;
}

DTensor UniversalBackendExecutor::act_output(const ActState& act) {
  const Tensor halting = be_.download(act.halting);
  const int64_t L = act.y.shape[0];
  Tensor steps({L}), rem({L}), ponder({L});
  for (size_t i = 0; i < size_t(L); ++i) {
    steps.data[i] = halting.data[4 * i + 2];
    rem.data[i] = halting.data[4 * i + 1];
    ponder.data[i] = steps.data[i] + rem.data[i];
  }
  Trace& trace = pass_.trace();
  trace.add(act_arrays::kSteps, "N(t): steps each position took [L]", std::move(steps), DType::I32);
  trace.add(act_arrays::kRemainder, "R(t): remainder at the halting step [L]", std::move(rem));
  trace.add(act_arrays::kPonder, "ponder cost N(t) + R(t) [L]", std::move(ponder));
  return act.y;
}

}  // namespace

DTensor universal_forward(ForwardPass& pass, const std::vector<TokenInfo>& tokens,
                          const std::vector<uint8_t>& key_valid) {
  UniversalBackendExecutor e(pass);
  return universal_stack(e, pass.config(), token_ids(tokens), key_valid);
}

}  // namespace atlas
