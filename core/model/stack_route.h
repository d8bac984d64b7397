#pragma once
// Which loop a forward runs over the input: the one rule that the inference forward
// (Model::forward, core/model/model.cpp) and the training forward (build_forward,
// core/train/train_model_impl.h) both dispatch on, so they cannot disagree about which stacks a
// config has. The stack kinds that change depth or segmentation come first; the Transformer
// stacks of seed 002 (each of them plain or reversible, core/model/standard_stacks.h) follow the
// architecture.
#include "core/config/config.h"

namespace atlas {

enum class StackRoute {
  HostModel,       // a whole model of its own on the host (recurrent seq2seq, NTM, SAGAN, SNAIL)
  Universal,       // one shared block applied recurrently (core/variants/universal/universal_stack.h)
  Xl,              // segments with memory (core/variants/transformer_xl/xl_stack.h)
  Encoder,         // an encoder over the source
  Decoder,         // a causal decoder over the source
  EncoderDecoder,  // an encoder over the source, a decoder over the target attending to it
};

// The stack kind's loop (core/model/stack_kind_module.h), else the architecture's (defined in
// core/model/stack_kind_module.cpp, beside the registry it asks).
StackRoute stack_route(const ModelConfig& c);

// The layer rows the encoder / the decoder trace: their layer counts, or the stack kind's depth
// (a Universal Transformer's steps).
int64_t traced_encoder_layers(const ModelConfig& c);
int64_t traced_decoder_layers(const ModelConfig& c);

}  // namespace atlas
