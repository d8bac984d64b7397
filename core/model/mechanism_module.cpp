#include "core/model/mechanism_module.h"

namespace atlas {

std::vector<const AttentionMechanismModule*> mechanisms_for(const ModelConfig& c) {
  static const std::vector<const AttentionMechanismModule*> all = generated_variant_mechanisms();
  std::vector<const AttentionMechanismModule*> used;
  for (const AttentionMechanismModule* m : all)
    if (m->used_by(c)) used.push_back(m);
  return used;
}

const AttentionMechanismModule* sparse_trace_mechanism(const ModelConfig& c) {
  for (const AttentionMechanismModule* m : mechanisms_for(c))
    if (m->sparse_nonzeros) return m;
  return nullptr;
}

}  // namespace atlas
