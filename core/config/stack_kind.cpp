#include "core/config/stack_kind.h"

#include <algorithm>

#include "core/config/config.h"

namespace atlas {

const char* stack_kind_name(const StackKind& stack) {
  struct Name {
    const char* operator()(const StandardStack&) const { return "standard"; }
    const char* operator()(const UniversalConfig&) const { return "universal"; }
    const char* operator()(const XLConfig&) const { return "xl"; }
    const char* operator()(const ReversibleConfig&) const { return "reversible"; }
    const char* operator()(const Seq2SeqConfig&) const { return "rnn_seq2seq"; }
    const char* operator()(const NtmConfig&) const { return "ntm"; }
    const char* operator()(const SaganConfig&) const { return "sagan"; }
    const char* operator()(const SnailConfig&) const { return "snail"; }
  };
  return std::visit(Name{}, stack);
}

std::string stack_kind_key(const StackKind& stack) {
  if (std::holds_alternative<StandardStack>(stack)) return "";
  if (std::holds_alternative<ReversibleConfig>(stack)) return "lsh.reversible";
  return std::string(stack_kind_name(stack)) + ".enabled";
}

namespace {

// A stack kind's layer rows beyond its config's layer counts (attention_layer_rows).
struct StackLayerRows {
  int64_t layers;
  int64_t operator()(const UniversalConfig& u) const { return std::max(layers, u.max_steps); }
  int64_t operator()(const SaganConfig&) const { return std::max<int64_t>(layers, 1); }
  int64_t operator()(const SnailConfig& s) const { return std::max(layers, s.tc_blocks + 1); }
  template <class Other>
  int64_t operator()(const Other&) const {
    return layers;
  }
};

}  // namespace

int64_t attention_layer_rows(const ModelConfig& c) {
  return std::visit(StackLayerRows{std::max(c.n_layers, c.n_decoder_layers)}, c.stack);
}

}  // namespace atlas
