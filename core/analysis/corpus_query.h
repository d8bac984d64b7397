#pragma once
// Questions to a corpus index (corpus_index.h): the strongest links of some maps, heads and
// tokens, and each link's place in its document, the query and key tokens marked.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/analysis/corpus_store.h"

namespace atlas {

struct CorpusLinkQuery {
  std::optional<std::string> map;  // "decoder.layer1.attn"
  std::optional<int64_t> layer;    // a Universal Transformer's step n is layer n - 1
  std::optional<int64_t> head;
  std::optional<std::string> query_token, key_token;  // see corpus_token_matches
  int64_t top = 10;
};

struct CorpusLinkMatch {
  MapHead map;
  TokenSide side = TokenSide::Source;
  CorpusLink link;
};

// The `top` strongest links that pass every filter, strongest first (weight, then document,
// map, head, query and key, all ascending). Throws AtlasError when --map or --head names
// nothing the index holds, listing what it holds.
std::vector<CorpusLinkMatch> find_corpus_links(const CorpusIndex& index, const CorpusLinkQuery& q);
// The same refusals for the head table (atlas corpus-query --heads): a --map, --layer or --head
// that names no row of it.
void check_head_table_query(const CorpusIndex& index, const CorpusLinkQuery& q);

// Whether a token label is the token a user typed: token_search.h's rule (the label without
// the marks of a leading space, "␣the" is "the", or a WordPiece continuation, "##ing"; "run*"
// by prefix), case-sensitively.
bool corpus_token_matches(const std::string& label, const std::string& wanted);

// The tokens around a link, `context` on each side of the query and of the key (one window
// when they are close, two joined by " ... " otherwise), the query as [[label]], the key as
// <<label>> (one token both: [[<<label>>]]). Labels are joined as the tokenizer spells text:
// "none" concatenates them with "␣" read as a space, "spaces" puts a space between words and
// glues "##" continuations.
std::string corpus_link_context(const std::vector<std::string>& tokens, int64_t query, int64_t key,
                                int64_t context, const std::string& token_join);

}  // namespace atlas
