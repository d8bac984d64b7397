// The "attention" and "ffn" config sections (block_config.h), declared as field tables.
#include "core/config/field_table.h"
#include "core/config/variant_choices.h"

namespace atlas::config_json {

namespace {

const FieldTable<AttentionLayout> kAttentionFields = {
    integer_field("kv_heads", &AttentionLayout::kv_heads, 0, 1024),
    integer_field("sliding_window", &AttentionLayout::sliding_window, 0, 1 << 24),
    integer_field("head_dim", &AttentionLayout::head_dim, 0, 1 << 16),
};

const FieldTable<FfnOptions> kFfnFields = {
    bool_field("gated", &FfnOptions::gated),
};

// Grouped heads and windows change what the plain softmax attention sees; the variants below
// bring key layouts or masks of their own, so a combination would silently drop one of them.
void check_attention_combinations(const ModelConfig& c, const std::string& origin) {
  const AttentionLayout& a = c.attention;
  if (a.kv_heads > 0 && c.n_heads % a.kv_heads != 0)
    fail(origin, "attention.kv_heads must divide n_heads (" + std::to_string(c.n_heads) +
                     "), got " + std::to_string(a.kv_heads));
  if (a.sliding_window > 0 && c.architecture == Architecture::Encoder)
    fail(origin, "attention.sliding_window needs causal self-attention (a decoder)");
  if (a.head_dim > 0 && a.head_dim * c.n_heads != c.d_model)  // plain attention only
    refuse_combinations(c, "attention.head_dim",
                        {"shaw", "adaptive_span", "xl", "universal", "lsh", "performer", "sparse",
                         "score_function", "rnn_seq2seq", "ntm", "sagan", "snail"},
                        origin);
  if (a.kv_heads == 0 && a.sliding_window == 0) return;
  refuse_combinations(c, "attention.kv_heads and attention.sliding_window",
                      {"shaw", "adaptive_span", "xl", "universal", "lsh", "performer", "sparse",
                       "score_function", "rnn_seq2seq", "ntm", "sagan", "snail"},
                      origin);
}

void check_ffn_combinations(const ModelConfig& c, const std::string& origin) {
  if (c.ffn.gated)  // these models have no Transformer feed-forward sub-layer
    refuse_combinations(c, "ffn.gated", {"rnn_seq2seq", "ntm", "sagan", "snail"}, origin);
}

}  // namespace

std::vector<ConfigSection> block_sections() {
  return {table_section<&ModelConfig::attention>("attention", &kAttentionFields,
                                                 &check_attention_combinations),
          table_section<&ModelConfig::ffn>("ffn", &kFfnFields, &check_ffn_combinations)};
}

}  // namespace atlas::config_json
