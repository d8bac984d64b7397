#include "core/config/stack_kind.h"

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

}  // namespace atlas
