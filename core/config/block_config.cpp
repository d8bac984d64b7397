// The "attention" and "ffn" config sections (block_config.h), declared as field tables.
#include "core/config/field_table.h"

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

// Which variants grouped heads and windows exclude: core/config/variant_choices.cpp.
void check_attention_combinations(const ModelConfig& c, const std::string& origin) {
  const AttentionLayout& a = c.attention;
  if (a.kv_heads > 0 && c.n_heads % a.kv_heads != 0)
    fail(origin, "attention.kv_heads must divide n_heads (" + std::to_string(c.n_heads) +
                     "), got " + std::to_string(a.kv_heads));
  if (a.sliding_window > 0 && c.architecture == Architecture::Encoder)
    fail(origin, "attention.sliding_window needs causal self-attention (a decoder)");
}

}  // namespace

std::vector<ConfigSection> block_sections() {
  return {table_section<&ModelConfig::attention>("attention", &kAttentionFields,
                                                 &check_attention_combinations),
          table_section<&ModelConfig::ffn>("ffn", &kFfnFields, nullptr)};
}

}  // namespace atlas::config_json
