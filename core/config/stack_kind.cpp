#include "core/config/stack_kind.h"

#include <algorithm>
#include <type_traits>

#include "core/config/config.h"

namespace atlas {

const char* stack_kind_name(const StackKind& stack) {
  return std::visit([](const auto& kind) { return std::decay_t<decltype(kind)>::kStackKindName; },
                    stack);
}

std::string stack_kind_key(const StackKind& stack) {
  return std::visit([](const auto& kind) { return std::decay_t<decltype(kind)>::kStackKindKey; },
                    stack);
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
