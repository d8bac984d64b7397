#pragma once
// What the layers of a model form: the standard Transformer stacks of its architecture, or one
// of the kinds that repeat or replace them. The config holds exactly one (ModelConfig::stack),
// so two stack kinds cannot be combined by construction; what a kind can be combined with
// otherwise is the compatibility table of core/config/variant_choices.cpp.
//
// In a config file each kind keeps its own section ("universal", "xl", "rnn_seq2seq", "ntm",
// "sagan", "snail") with "enabled": true; at most one may be enabled.
#include <string>
#include <variant>

#include "core/config/memory_network_config.h"
#include "core/config/relative_recurrent_config.h"
#include "core/config/score_seq2seq_config.h"

namespace atlas {

// Encoder, decoder or both (ModelConfig::architecture) of standard blocks, each with the
// attention and feed-forward options of the config.
struct StandardStack {};

using StackKind = std::variant<StandardStack, UniversalConfig, XLConfig, Seq2SeqConfig, NtmConfig,
                               SaganConfig, SnailConfig>;

// "standard", "universal", "xl", "rnn_seq2seq", "ntm", "sagan", "snail": the config section
// that chose the kind (the name the compatibility table and messages use).
const char* stack_kind_name(const StackKind& stack);

}  // namespace atlas
