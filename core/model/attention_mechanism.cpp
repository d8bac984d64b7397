#include "core/model/attention_mechanism.h"

#include <variant>

#include "core/model/stack_kind_module.h"

namespace atlas {

AttentionMechanism attention_mechanism(const ModelConfig& c, bool self_attention) {
  struct Choose {
    bool self;
    AttentionMechanism operator()(const SoftmaxAttention& s) const {
      return self && (s.shaw || s.adaptive_span) ? AttentionMechanism::Relative
                                                 : AttentionMechanism::Softmax;
    }
    AttentionMechanism operator()(const SparseConfig&) const {
      return self ? AttentionMechanism::SparsePattern : AttentionMechanism::Softmax;
    }
    AttentionMechanism operator()(const LshConfig&) const {
      return self ? AttentionMechanism::Lsh : AttentionMechanism::Softmax;
    }
    AttentionMechanism operator()(const PerformerConfig&) const {
      return self ? AttentionMechanism::Performer : AttentionMechanism::Softmax;
    }
    AttentionMechanism operator()(const ScoreConfig&) const {
      return AttentionMechanism::ScoreFunction;
    }
  };
  // The host models (the recurrent seq2seq, whose score function is its own) never reach a
  // sub-layer.
  if (host_model_kind(c)) return AttentionMechanism::Softmax;
  return std::visit(Choose{self_attention}, c.attention_kind);
}

}  // namespace atlas
