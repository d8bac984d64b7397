// The registry of config sections (config_json.h). A variant adds its nested object by
// defining its sections in its own folder (core/variants/<name>/<name>_config.cpp) and listing
// them here. The order is the order of reading and of the keys written: a section may read what
// an earlier one chose ("gating" sets the gates of the stack "xl" chose).
#include "core/config/config_json.h"

namespace atlas::config_json {

// One per variant folder, core/variants/<name>/<name>_config.cpp.
std::vector<ConfigSection> shaw_sections();            // "shaw"
std::vector<ConfigSection> adaptive_span_sections();   // "adaptive_span"
std::vector<ConfigSection> universal_sections();       // "universal"
std::vector<ConfigSection> transformer_xl_sections();  // "xl"
std::vector<ConfigSection> gtrxl_sections();           // "gating"
std::vector<ConfigSection> sparse_sections();          // "sparse"
std::vector<ConfigSection> reformer_sections();        // "lsh" (LSH attention, reversible stack)
std::vector<ConfigSection> performer_sections();       // "performer"
std::vector<ConfigSection> score_functions_sections();  // "score"
std::vector<ConfigSection> seq2seq_sections();         // "rnn_seq2seq"
std::vector<ConfigSection> ntm_sections();             // "ntm"
std::vector<ConfigSection> sagan_sections();           // "sagan"
std::vector<ConfigSection> snail_sections();           // "snail"
// Hugging Face embedding and output-head options (BERT, ViT): config_embeddings.cpp
std::vector<ConfigSection> embedding_sections();
// Rotary position embedding: core/variants/rotary/rope_config.cpp
std::vector<ConfigSection> rope_sections();
// Grouped-query heads, sliding window, gated feed-forward: block_config.cpp
std::vector<ConfigSection> block_sections();

const std::vector<ConfigSection>& config_sections() {
  static const std::vector<ConfigSection> sections = [] {
    std::vector<ConfigSection> all;
    for (auto make : {shaw_sections, adaptive_span_sections, universal_sections,
                      transformer_xl_sections, gtrxl_sections, sparse_sections, reformer_sections,
                      performer_sections, score_functions_sections, seq2seq_sections,
                      ntm_sections, sagan_sections, snail_sections, embedding_sections,
                      rope_sections, block_sections})
      for (auto& s : make()) all.push_back(s);
    return all;
  }();
  return sections;
}

}  // namespace atlas::config_json
