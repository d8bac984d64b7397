#include "core/model/attention_mechanism.h"

#include "core/model/stack_kind_module.h"
#include "core/tensor/error.h"

namespace atlas {

const AttentionMechanismModule* attention_mechanism(const ModelConfig& c, bool self_attention) {
  // The host models (the recurrent seq2seq, whose score function is its own) never reach a
  // sub-layer.
  if (host_model_kind(c)) return nullptr;
  const AttentionMechanismModule* chosen = nullptr;
  for (const AttentionMechanismModule* m : mechanisms_for(c)) {
    if (!m->kernel || !(self_attention || m->kernel->cross_attention)) continue;
    if (!chosen)
      chosen = m;
    else if (chosen->kernel != m->kernel)
      throw AtlasError(std::string("internal: attention mechanisms ") + chosen->name + " and " +
                       m->name + " both claim one sub-layer");
  }
  return chosen;
}

}  // namespace atlas
