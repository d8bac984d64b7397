// The NTM model path: controller maths and tracing (equations in ntm_model.h).
#include "core/variants/ntm/ntm_model.h"

#include <cmath>

#include "core/tensor/error.h"
#include "core/variants/ntm/ntm.h"
#include "core/model/model_arrays.h"
#include "core/tensor/sigmoid.h"
#include "core/model/params.h"

namespace atlas {

namespace {

int64_t shift_size(const ModelConfig& c) { return 2 * c.ntm()->shift_range + 1; }

// Outputs of one head's linear layer: k, beta, g, s, gamma (+ e, a for write heads).
int64_t head_outputs(const ModelConfig& c, bool write) {
  const int64_t M = c.ntm()->memory_width;
  return M + 3 + shift_size(c) + (write ? 2 * M : 0);
}

RowVec row_of(const Tensor& t) { return Eigen::Map<const RowVec>(t.data.data(), t.numel()); }

float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }
NtmHeadControls controls_from(const ModelConfig& c, const RowVec& raw, bool write) {
  const int64_t M = c.ntm()->memory_width, S = shift_size(c);
  NtmHeadControls h;
  int64_t at = 0;
  h.key = raw.segment(at, M).array().tanh();
  at += M;
  h.beta = softplus(raw[at++]);
  h.gate = sigmoid(raw[at++]);
  RowVec s = raw.segment(at, S);
  at += S;
  s = (s.array() - s.maxCoeff()).exp();
  h.shift = s / s.sum();
  h.gamma = 1.0f + softplus(raw[at++]);
  if (write) {
    h.erase = raw.segment(at, M).unaryExpr([](float v) { return sigmoid(v); });
    at += M;
    h.add = raw.segment(at, M).array().tanh();
  }
  return h;
}

}  // namespace

std::vector<std::string> ntm_head_names(const ModelConfig& c) {
  std::vector<std::string> names;
  for (int64_t i = 0; i < c.ntm()->read_heads; ++i) names.push_back("read" + std::to_string(i));
  for (int64_t i = 0; i < c.ntm()->write_heads; ++i) names.push_back("write" + std::to_string(i));
  return names;
}

std::vector<ParamSpec> ntm_param_specs(const ModelConfig& c) {
  const NtmConfig& n = std::get<NtmConfig>(c.stack);
  const int64_t H = n.controller_size, reads = n.read_heads * n.memory_width;
  std::vector<ParamSpec> specs;
  specs.push_back({"embed.tokens", {c.vocab_size, c.d_model}});
  specs.push_back({"ntm.memory0", {n.memory_slots, n.memory_width}});
  specs.push_back({"ntm.controller.w", {H, c.d_model + reads}});
  specs.push_back({"ntm.controller.b", {H}, InitKind::Zeros});
  for (const auto& name : ntm_head_names(c)) {
    const int64_t P = head_outputs(c, name.rfind("write", 0) == 0);
    specs.push_back({"ntm." + name + ".w", {P, H}});
    specs.push_back({"ntm." + name + ".b", {P}, InitKind::Zeros});
  }
  specs.push_back({"ntm.output.w", {c.vocab_size, H + reads}});
  specs.push_back({"ntm.output.b", {c.vocab_size}, InitKind::Zeros});
  return specs;
}

RunResult ntm_forward(const ModelConfig& c, const ParamStore& p, const std::vector<TokenInfo>& tokens,
                      const RunOptions& options) {
  if (tokens.empty()) throw AtlasError("input text is empty: nothing to run");
  if (static_cast<int64_t>(tokens.size()) > c.max_positions)
    throw AtlasError("input text has " + std::to_string(tokens.size()) +
                     " tokens, more than the model's max_positions " + std::to_string(c.max_positions));
  for (const auto& t : tokens)
    if (t.id < 0 || t.id >= c.vocab_size)
      throw AtlasError("input text: token id " + std::to_string(t.id) + " is outside the vocabulary of " +
                       std::to_string(c.vocab_size));
  const NtmConfig& n = std::get<NtmConfig>(c.stack);
  const int64_t M = n.memory_width, H = n.controller_size, V = c.vocab_size;
  const int64_t L = static_cast<int64_t>(tokens.size());
  std::vector<NtmHeadSpec> heads;
  for (const auto& name : ntm_head_names(c)) heads.push_back({name, name.rfind("write", 0) == 0});

  NtmMachine machine(heads, required_param(p, "ntm.memory0").mat());
  RowVec reads(n.read_heads * M);  // r_{t-1}, all read heads side by side
  for (int64_t r = 0; r < n.read_heads; ++r)
    reads.segment(r * M, M) = ntm_read(machine.memory(), machine.previous_weights(size_t(r)));

  const ConstMatMap embed = required_param(p, "embed.tokens").mat();
  const Mat wc = required_param(p, "ntm.controller.w").mat();
  const Mat wo = required_param(p, "ntm.output.w").mat();
  const RowVec bc = row_of(required_param(p, "ntm.controller.b"));
  const RowVec bo = row_of(required_param(p, "ntm.output.b"));
  Tensor logits({L, V});
  for (int64_t t = 0; t < L; ++t) {
    if (options.cancel && options.cancel->load()) throw Cancelled();
    RowVec in(c.d_model + reads.size());
    in << embed.row(tokens[size_t(t)].id), reads;
    const RowVec h = ((in * wc.transpose()) + bc).array().tanh();  // [H]
    std::vector<NtmHeadControls> controls;
    for (const auto& head : heads) {
      const RowVec raw = h * required_param(p, "ntm." + head.name + ".w").mat().transpose() +
                         row_of(required_param(p, "ntm." + head.name + ".b"));
      controls.push_back(controls_from(c, raw, head.write));
    }
    const NtmStep& s = machine.step(std::move(controls));
    for (int64_t r = 0; r < n.read_heads; ++r) reads.segment(r * M, M) = s.reads[size_t(r)];
    RowVec out(H + reads.size());
    out << h, reads;
    Eigen::Map<RowVec>(logits.data.data() + t * V, V) = out * wo.transpose() + bo;
    if (options.progress) options.progress(double(t + 1) / double(L), "NTM step");
  }

  RunResult result;
  result.trace.source_tokens = tokens;
  if (options.trace.attention) trace_ntm_run(machine.run(), result.trace);
  result.output = logits;
  result.is_logits = true;
  result.trace.add(model_arrays::kLogits, "output logits per position [L, vocab]", std::move(logits));
  return result;
}

}  // namespace atlas
