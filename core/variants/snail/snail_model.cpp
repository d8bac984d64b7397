// SNAIL as a model (snail_model.h).
#include "core/variants/snail/snail_model.h"

#include "core/tensor/error.h"
#include "core/model/model_arrays.h"
#include "core/model/params.h"

namespace atlas {

SnailSpec snail_spec(const ModelConfig& c) {
  SnailSpec s;
  s.d_input = c.d_model;
  s.filters = c.snail()->filters;
  s.key_size = c.snail()->key_size;
  s.value_size = c.snail()->value_size;
  s.tc_blocks = c.snail()->tc_blocks;
  s.paper_dilations = c.snail()->paper_dilations;
  s.length = c.snail()->length;
  s.view_names = true;
  return s;
}

std::vector<ParamSpec> snail_param_specs(const ModelConfig& c) {
  std::vector<ParamSpec> specs;
  specs.push_back({"embed.tokens", {c.vocab_size, c.d_model}});
  const int64_t channels = snail_visit_weights(snail_spec(c), [&](const std::string& name, int64_t rows, int64_t cols) {
    if (rows == 1) specs.push_back({name, {cols}, InitKind::Zeros});  // the dense blocks' biases
    else specs.push_back({name, {rows, cols}});
  });
  specs.push_back({"snail.output.w", {c.vocab_size, channels}});
  specs.push_back({"snail.output.b", {c.vocab_size}, InitKind::Zeros});
  return specs;
}

RunResult snail_model_forward(const ModelConfig& c, const ParamStore& p, const std::vector<TokenInfo>& tokens,
                              const RunOptions& options) {
  if (tokens.empty()) throw AtlasError("input text is empty: nothing to run");
  for (const auto& t : tokens)
    if (t.id < 0 || t.id >= c.vocab_size)
      throw AtlasError("input text: token id " + std::to_string(t.id) + " is outside the vocabulary of " +
                       std::to_string(c.vocab_size));
  auto tensor = [&p](const std::string& name) -> const Tensor& { return required_param(p, name); };
  const int64_t L = static_cast<int64_t>(tokens.size());
  const ConstMatMap embed = tensor("embed.tokens").mat();
  Mat x(L, c.d_model);
  for (int64_t t = 0; t < L; ++t) x.row(t) = embed.row(tokens[size_t(t)].id);
  const SnailWeights weights = [&](const std::string& name, int64_t rows, int64_t cols) {
    const Tensor& w = tensor(name);
    if (w.numel() != rows * cols)
      throw AtlasError("SNAIL model: tensor " + name + " has " + std::to_string(w.numel()) + " values, expected " +
                       std::to_string(rows) + " x " + std::to_string(cols));
    return Mat(Eigen::Map<const Mat>(w.data.data(), rows, cols));
  };
  RunResult result;
  result.trace.source_tokens = tokens;
  Trace scratch;  // the attention arrays go to the result's trace only when asked for
  const Mat h = snail_forward(snail_spec(c), x, options.trace.attention ? &result.trace : &scratch, weights);
  const Tensor& wo = tensor("snail.output.w");
  const Mat logits = (h * wo.mat().transpose()).rowwise() +
                     Eigen::Map<const RowVec>(tensor("snail.output.b").data.data(), c.vocab_size);
  result.output = Tensor::from_mat(logits);
  result.is_logits = true;
  result.trace.add(model_arrays::kLogits, "output logits per position [L, vocab]", result.output);
  if (options.progress) options.progress(1.0, "SNAIL");
  return result;
}

}  // namespace atlas
