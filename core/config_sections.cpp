// The registry of variant config sections (config_json.h). A variant adds its nested object
// by defining a ConfigSection in its own file and listing it here.
#include "config_json.h"

namespace atlas::config_json {

std::vector<ConfigSection> variant_sections_i();   // variants I (issue 3), config_variants_i.cpp
std::vector<ConfigSection> variant_sections_ii();  // variants II (issue 4), config_variants_ii.cpp
std::vector<ConfigSection> attention_family_sections();  // issue 8, config_attention_family.cpp
std::vector<ConfigSection> attention_family_ii_sections();  // issue 8, config_attention_family_ii.cpp
std::vector<ConfigSection> embedding_sections();   // BERT embeddings (issue 7), config_embeddings.cpp

const std::vector<ConfigSection>& config_sections() {
  static const std::vector<ConfigSection> sections = [] {
    std::vector<ConfigSection> all;
    for (auto& s : variant_sections_i()) all.push_back(s);
    for (auto& s : variant_sections_ii()) all.push_back(s);
    for (auto& s : attention_family_sections()) all.push_back(s);
    for (auto& s : attention_family_ii_sections()) all.push_back(s);
    for (auto& s : embedding_sections()) all.push_back(s);
    return all;
  }();
  return sections;
}

}  // namespace atlas::config_json
