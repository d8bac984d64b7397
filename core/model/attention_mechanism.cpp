#include "core/model/attention_mechanism.h"

#include <variant>

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
  // The recurrent seq2seq models run on the host (HostModel) and never reach a sub-layer.
  if (c.rnn_seq2seq()) return AttentionMechanism::Softmax;
  return std::visit(Choose{self_attention}, c.attention_kind);
}

}  // namespace atlas
