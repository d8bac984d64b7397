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

#include <cmath>

#include "core/model/model_arrays.h"
#include "core/model/positional.h"
#include "core/variants/relative_attention/relative_attention.h"
#include "core/variants/universal/act_step.h"

namespace atlas {

namespace {

std::string stack_of(const ModelConfig& c) {
  return c.architecture == Architecture::Decoder ? "decoder" : "encoder";
}
std::string attn_of(const ModelConfig& c) {
  return c.architecture == Architecture::Decoder ? "self_attn" : "attn";
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

DTensor universal_forward(ForwardPass& pass, const std::vector<TokenInfo>& tokens,
                          const std::vector<uint8_t>& key_valid) {
  const ModelConfig& c = pass.config();
  const UniversalConfig& u = std::get<UniversalConfig>(c.stack);
  Backend& be = pass.backend();
  Trace& trace = pass.trace();
  const TraceOptions& topt = pass.options().trace;
  const std::string stack = stack_of(c), pre = stack + ".universal", attn = attn_of(c);
  const int64_t L = static_cast<int64_t>(tokens.size()), d = c.d_model;

  std::vector<int32_t> ids;
  for (const auto& t : tokens) ids.push_back(t.id);
  DTensor table = pass.weight("embed.tokens");
  if (c.fixnorm) table = be.row_normalize(table, 1e-5f);
  DTensor state = be.embedding(table, ids, c.scale_embedding ? std::sqrt(float(d)) : 1.0f);
  const Tensor pos = sinusoid_table(L, d, c.sinusoid_layout);
  if (topt.positional) trace.add(model_arrays::kPositional, "position signal added at every step [L, d]", pos);
  auto signal = [&](int64_t n) {  // P_pos + P_time(n), the same time row for every position
    Tensor s = pos;
    const Tensor time = sinusoid_table(1, d, c.sinusoid_layout, n);
    for (int64_t i = 0; i < L; ++i)
      for (int64_t k = 0; k < d; ++k) s.data[size_t(i * d + k)] += time.data[size_t(k)];
    return s;
  };
  AttentionMask mask;
  mask.causal = c.architecture == Architecture::Decoder;
  mask.key_valid = key_valid;
  auto block = [&](const DTensor& s, int64_t n) {
    DTensor x = pass.sublayer(s, pre + "." + attn + "_norm", [&](const DTensor& h) {
      return pass.attention(h, h, pre + "." + attn, attention_site(stack, attn, 0, n), mask);
    });
    return pass.sublayer(x, pre + ".ffn_norm", [&](const DTensor& h) { return pass.ffn(h, pre + ".ffn"); });
  };

  if (!u.act) {  // fixed number of steps: a deep model with tied layers
    for (int64_t n = 1; n <= u.max_steps; ++n) {
      state = block(be.add(state, be.upload(signal(n))), n);
      if (topt.hidden)
        trace.add(stack + ".step" + std::to_string(n) + ".hidden", "state after the step [L, d]", be.download(state));
      pass.step("universal step " + std::to_string(n));
    }
    if (c.norm_position == NormPosition::Pre) state = pass.norm(state, stack + ".final_norm");
    return state;
  }

  // ACT (act_step, core/variants/universal/act_step.h): the halting state stays on the backend;
  // one small download per step decides whether any position still runs and fills the
  // per-step trace rows.
  ActStepArgs args;
  args.threshold = 1.0f - u.epsilon;
  args.interpolate = u.update == ActUpdate::Interpolate;
  ActState act{be.upload(Tensor({L, 4})), be.upload(Tensor({L, d})), state};
  for (int64_t n = 1; n <= u.max_steps; ++n) {
    const DTensor s = be.add(act.state, be.upload(signal(n)));
    const DTensor logit = be.linear(s, pass.weight(pre + ".halt.w"), pass.weight(pre + ".halt.b"));
    args.last_step = n == u.max_steps;
    const ActStepResult r = act_step(be, act, logit, block(s, n), args);
    act = r.next;
    const std::vector<Tensor> host = be.download_all({r.weights, act.halting});
    std::vector<float> p(static_cast<size_t>(L)), w(static_cast<size_t>(L));
    bool any_running = false;
    for (size_t i = 0; i < size_t(L); ++i) {
      p[i] = host[0].data[2 * i];
      w[i] = host[0].data[2 * i + 1];
      any_running |= host[1].data[4 * i + 3] == 0.0f;
    }
    append_trace_row(trace, act_arrays::kHalting, "halting probability h per step and position (0 once halted) [steps, L]", p, {L});
    append_trace_row(trace, act_arrays::kWeights, "update weight p (h, or the remainder R at the halting step) [steps, L]", w, {L});
    if (topt.hidden)
      pass.trace_later(stack + ".step" + std::to_string(n) + ".hidden", "state after the step [L, d]", act.state);
    pass.step("universal step " + std::to_string(n));
    if (!any_running) break;
  }
  const Tensor halting = be.download(act.halting);
  Tensor steps({L}), rem({L}), ponder({L});
  for (size_t i = 0; i < size_t(L); ++i) {
    steps.data[i] = halting.data[4 * i + 2];
    rem.data[i] = halting.data[4 * i + 1];
    ponder.data[i] = steps.data[i] + rem.data[i];
  }
  trace.add(act_arrays::kSteps, "N(t): steps each position took [L]", std::move(steps), DType::I32);
  trace.add(act_arrays::kRemainder, "R(t): remainder at the halting step [L]", std::move(rem));
  trace.add(act_arrays::kPonder, "ponder cost N(t) + R(t) [L]", std::move(ponder));
  DTensor y = act.y;
  if (c.norm_position == NormPosition::Pre) y = pass.norm(y, stack + ".final_norm");
  return y;
}

}  // namespace atlas
