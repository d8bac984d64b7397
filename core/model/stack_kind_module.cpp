#include "core/model/stack_kind_module.h"

namespace atlas {

const StackKindModule* stack_kind_module(const ModelConfig& c) {
  static const std::vector<const StackKindModule*> kinds = generated_variant_stack_kinds();
  for (const StackKindModule* k : kinds)
    if (k->used_by(c)) return k;
  return nullptr;
}

const HostModelKind* host_model_kind(const ModelConfig& c) {
  const StackKindModule* k = stack_kind_module(c);
  return k ? k->host : nullptr;
}

const char* shared_block_of(const ModelConfig& c) {
  const StackKindModule* k = stack_kind_module(c);
  return k ? k->shared_block : nullptr;
}

bool has_layer_stack(const ModelConfig& c) {
  const StackKindModule* k = stack_kind_module(c);
  return !k || k->layer_stack;
}

bool has_reversible_layers(const ModelConfig& c) {
  const StackKindModule* k = stack_kind_module(c);
  return k && k->reversible_layers;
}

StackRoute stack_route(const ModelConfig& c) {
  const StackKindModule* k = stack_kind_module(c);
  if (k && k->has_route) return k->route;
  switch (c.architecture) {
    case Architecture::Encoder: return StackRoute::Encoder;
    case Architecture::Decoder: return StackRoute::Decoder;
    case Architecture::EncoderDecoder: break;
  }
  return StackRoute::EncoderDecoder;
}

int64_t traced_encoder_layers(const ModelConfig& c) {
  const StackKindModule* k = stack_kind_module(c);
  return k && k->traced_depth ? k->traced_depth(c) : c.n_layers;
}

int64_t traced_decoder_layers(const ModelConfig& c) {
  const StackKindModule* k = stack_kind_module(c);
  return k && k->traced_depth ? k->traced_depth(c) : c.decoder_layers();
}

}  // namespace atlas
