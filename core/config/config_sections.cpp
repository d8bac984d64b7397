// The registry of variant config sections (config_json.h). A variant adds its nested object
// by defining a ConfigSection in its own file and listing it here.
#include "core/config/config_json.h"

namespace atlas::config_json {

// Shaw, adaptive span, Transformer-XL, GTrXL gating, Universal Transformer: relative_recurrent_config.cpp
std::vector<ConfigSection> relative_recurrent_sections();
// Sparse patterns, Reformer LSH, Performer: efficient_attention_config.cpp
std::vector<ConfigSection> efficient_attention_sections();
// Score functions, recurrent seq2seq and Pointer Network: score_seq2seq_config.cpp
std::vector<ConfigSection> score_seq2seq_sections();
// Neural Turing Machine, SAGAN, SNAIL: memory_network_config.cpp
std::vector<ConfigSection> memory_network_sections();
// Hugging Face embedding and output-head options (BERT, ViT): config_embeddings.cpp
std::vector<ConfigSection> embedding_sections();
// Rotary position embedding: core/variants/rotary/rope_config.cpp
std::vector<ConfigSection> rope_sections();
// Grouped-query heads, sliding window, gated feed-forward: block_config.cpp
std::vector<ConfigSection> block_sections();

const std::vector<ConfigSection>& config_sections() {
  static const std::vector<ConfigSection> sections = [] {
    std::vector<ConfigSection> all;
    for (auto& s : relative_recurrent_sections()) all.push_back(s);
    for (auto& s : efficient_attention_sections()) all.push_back(s);
    for (auto& s : score_seq2seq_sections()) all.push_back(s);
    for (auto& s : memory_network_sections()) all.push_back(s);
    for (auto& s : embedding_sections()) all.push_back(s);
    for (auto& s : rope_sections()) all.push_back(s);
    for (auto& s : block_sections()) all.push_back(s);
    return all;
  }();
  return sections;
}

}  // namespace atlas::config_json
