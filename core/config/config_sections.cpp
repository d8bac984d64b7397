// The registry of config sections (config_json.h): every variant folder's sections, in
// folder-name order (the list is generated from core/variants/ by
// cmake/fuzz_parser_sources.cmake), then the options of core/config. The order is the order of
// reading and of the keys written; a section with `after` moves behind the one it names.
#include <algorithm>

#include "core/config/config_json.h"

namespace atlas::config_json {

std::vector<ConfigSection> generated_variant_sections();
// Hugging Face embedding and output-head options (BERT, ViT): config_embeddings.cpp
std::vector<ConfigSection> embedding_sections();
// Grouped-query heads, sliding window, gated feed-forward: block_config.cpp
std::vector<ConfigSection> block_sections();

namespace {

// Moves each section with `after` right behind the section it names (after any moved there
// before it).
std::vector<ConfigSection> in_reading_order(const std::vector<ConfigSection>& listed) {
  std::vector<ConfigSection> ordered;
  for (const ConfigSection& s : listed)
    if (!s.after) ordered.push_back(s);
  for (const ConfigSection& s : listed) {
    if (!s.after) continue;
    auto first = std::find_if(ordered.begin(), ordered.end(), [&](const ConfigSection& o) {
      return std::string(o.key) == s.after;
    });
    if (first == ordered.end())
      throw AtlasError(std::string("internal: config section \"") + s.key +
                       "\" is to be read after \"" + s.after + "\", which no variant defines");
    auto end = first + 1;
    while (end != ordered.end() && end->after && std::string(end->after) == s.after) ++end;
    ordered.insert(end, s);
  }
  return ordered;
}

}  // namespace

const std::vector<ConfigSection>& config_sections() {
  static const std::vector<ConfigSection> sections = [] {
    std::vector<ConfigSection> all = generated_variant_sections();
    for (auto make : {embedding_sections, block_sections})
      for (auto& s : make()) all.push_back(s);
    return in_reading_order(all);
  }();
  return sections;
}

}  // namespace atlas::config_json
