// The "attention" and "ffn" config sections (block_config.h), declared as field tables.
#include "core/config/field_table.h"

namespace atlas::config_json {

namespace {

const FieldTable<AttentionLayout> kAttentionFields = {
    integer_field("kv_heads", &AttentionLayout::kv_heads, 0, 1024),
    integer_field("sliding_window", &AttentionLayout::sliding_window, 0, 1 << 24),
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
  if (a.kv_heads == 0 && a.sliding_window == 0) return;
  const std::pair<bool, const char*> others[] = {
      {c.shaw.enabled, "shaw"},
      {c.adaptive_span.enabled, "adaptive_span"},
      {c.xl.enabled, "xl"},
      {c.universal.enabled, "universal"},
      {c.lsh.enabled || c.lsh.reversible, "lsh"},
      {c.performer.enabled, "performer"},
      {c.sparse.enabled(), "sparse"},
      {c.score.function != ScoreFunction::ScaledDot, "a score function other than scaled_dot"},
      {c.rnn_seq2seq.enabled || c.ntm.enabled || c.sagan.enabled || c.snail.enabled,
       "a recurrent or memory model"},
  };
  for (const auto& [on, what] : others)
    if (on) fail(origin, std::string("attention.kv_heads and attention.sliding_window cannot be "
                                     "combined with ") + what);
}

void check_ffn_combinations(const ModelConfig& c, const std::string& origin) {
  if (c.ffn.gated && (c.rnn_seq2seq.enabled || c.ntm.enabled || c.sagan.enabled || c.snail.enabled))
    fail(origin, "ffn.gated needs a Transformer block (this model has no feed-forward sub-layer)");
}

}  // namespace

std::vector<ConfigSection> block_sections() {
  return {table_section<&ModelConfig::attention>("attention", &kAttentionFields,
                                                 &check_attention_combinations),
          table_section<&ModelConfig::ffn>("ffn", &kFfnFields, &check_ffn_combinations)};
}

}  // namespace atlas::config_json
