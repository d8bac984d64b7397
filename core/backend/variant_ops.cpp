#include "core/backend/variant_ops.h"

#include "core/backend/module_op.h"
#include "core/model/mechanism_module.h"
#include "core/model/stack_kind_module.h"

namespace atlas {

std::vector<Op> variant_ops(const ModelConfig& c) {
  std::vector<Op> ops;
  const StackKindModule* kind = stack_kind_module(c);  // core/model/stack_kind_module.h
  if (kind && kind->host) return {Op::HostModel};
  // Transformer-XL runs its own layers (transformer_xl.cpp) over its module op: no other
  // attention hook applies.
  if (kind && kind->own_attention) return ops;
  // Self-attention's mechanism (core/model/attention_mechanism.h): LSH runs on the host. Performer,
  // CSR patterns and Shaw / adaptive span are module ops, which say themselves that they are used.
  for (const AttentionMechanismModule* m : mechanisms_for(c))
    if (m->host_op != Op::Count) ops.push_back(m->host_op);
  return ops;
}

std::vector<std::string> expected_fallbacks(const ModelConfig& c, const Backend& backend) {
  std::vector<std::string> lines;
  for (Op op : variant_ops(c))
    if (!backend.supports(op)) lines.push_back(host_fallback_line(op));
  if (host_model_kind(c)) return lines;  // no backend ops
  for (const ModuleOp* op : module_ops())
    if (op->used_by(c) && !backend.supports_module_op(*op))
      lines.push_back(module_fallback_line(*op));
  return lines;
}

}  // namespace atlas
