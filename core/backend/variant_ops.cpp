#include "core/backend/variant_ops.h"

#include "core/backend/module_op.h"

namespace atlas {

std::vector<Op> variant_ops(const ModelConfig& c) {
  std::vector<Op> ops;
  if (c.rnn_seq2seq() || c.ntm() || c.sagan() || c.snail()) return {Op::HostModel};
  // Transformer-XL runs its own layers (transformer_xl.cpp) over its module op: no other
  // attention hook applies.
  if (c.xl()) return ops;
  // Self-attention's mechanism (core/model/attention_mechanism.h): LSH runs on the host. Performer,
  // CSR patterns and Shaw / adaptive span are module ops, which say themselves that they are used.
  if (c.lsh()) ops.push_back(Op::LshAttention);
  return ops;
}

std::vector<std::string> expected_fallbacks(const ModelConfig& c, const Backend& backend) {
  std::vector<std::string> lines;
  for (Op op : variant_ops(c))
    if (!backend.supports(op)) lines.push_back(host_fallback_line(op));
  if (c.rnn_seq2seq() || c.ntm() || c.sagan() || c.snail()) return lines;  // no backend ops
  for (const ModuleOp* op : module_ops())
    if (op->used_by(c) && !backend.supports_module_op(*op))
      lines.push_back(module_fallback_line(*op));
  return lines;
}

}  // namespace atlas
