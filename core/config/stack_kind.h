#pragma once
// What the layers of a model form: the standard Transformer stacks of its architecture, or one
// of the kinds that repeat or replace them. The config holds exactly one (ModelConfig::stack),
// so two stack kinds cannot be combined by construction; what a kind can be combined with
// otherwise is the compatibility table (core/config/variant_choices.h).
//
// In a config file each kind keeps its own section ("universal", "xl", "rnn_seq2seq", "ntm",
// "sagan", "snail") with "enabled": true, the reversible stack "lsh": {"reversible": true}; at
// most one may be chosen.
#include <cstdint>
#include <string>
#include <variant>

#include "core/variants/ntm/ntm_config.h"
#include "core/variants/reformer/reformer_config.h"
#include "core/variants/sagan/sagan_config.h"
#include "core/variants/seq2seq/seq2seq_config.h"
#include "core/variants/snail/snail_config.h"
#include "core/variants/transformer_xl/transformer_xl_config.h"
#include "core/variants/universal/universal_config.h"

namespace atlas {

struct ModelConfig;

// Encoder, decoder or both (ModelConfig::architecture) of standard blocks, each with the
// attention and feed-forward options of the config.
struct StandardStack {
  static constexpr const char* kStackKindName = "standard";
  static constexpr const char* kStackKindKey = "";
};

using StackKind = std::variant<StandardStack, UniversalConfig, XLConfig, ReversibleConfig,
                               Seq2SeqConfig, NtmConfig, SaganConfig, SnailConfig>;

// "standard", "universal", "xl", "reversible", "rnn_seq2seq", "ntm", "sagan", "snail": the
// kind's name in the compatibility table (each kind's config struct says its own,
// kStackKindName, and its key, kStackKindKey).
const char* stack_kind_name(const StackKind& stack);
// The config key that chose the kind: "universal.enabled", ..., "lsh.reversible" ("" for the
// standard stacks); messages name it.
std::string stack_kind_key(const StackKind& stack);

// How many layer rows an attention-map family of such a model can have at most (the rows of
// head_statistics_families' tables: layers, a Universal Transformer's steps, a SNAIL's attention
// blocks). A corpus manifest's layer numbers are checked against it when a run is resumed.
int64_t attention_layer_rows(const ModelConfig& c);

}  // namespace atlas
