#pragma once
// Token search: which heads link a query token to a key token? For a query pattern and a key
// pattern over the input's token labels, every head of every self- or cross-attention map is
// scored by the attention its matching queries put on matching keys:
//   score = mean over query rows i that match of  sum over matching keys j of A[h, i, j]
// (0..1: the share of a matching query's attention that lands on matching keys), with the
// strongest single link. The researcher's "where does 'it' look at 'cat'" over every layer and
// head at once.
//
// Patterns match token labels after the marks tokenizers put on a word are dropped (a leading
// space, "␣", GPT-2's "Ġ", SentencePiece's "▁", WordPiece's continuation "##"), ignoring case
// unless asked not to: "mary" matches " Mary", "␣Mary" and "ĠMary". A trailing "*" matches by
// prefix ("run*": "running"), and "*" alone matches every token. The corpus queries use the
// same rule, case-sensitively (corpus_query.h).
#include <cstdint>
#include <string>
#include <vector>

#include "core/model/trace.h"

namespace atlas {

// Whether `label` matches `pattern` (above).
bool token_matches(const std::string& label, const std::string& pattern, bool ignore_case = true);
// The positions of `tokens` whose labels match.
std::vector<int64_t> matching_tokens(const std::vector<TokenInfo>& tokens, const std::string& pattern);

struct TokenLinkScore {
  AttentionMap map;
  int64_t head = 0;
  double score = 0.0;       // mean attention mass of matching queries on matching keys
  int64_t queries = 0;      // matching query rows that were scored
  int64_t best_query = -1;  // the strongest single link: row and column of the map
  int64_t best_key = -1;
  double best_weight = 0.0;
};

// Every dense map of the catalogue (self and cross attention, XL memory keys by their tokens)
// and head whose query side has a match and key side has a match, highest score first. Throws
// AtlasError naming the pattern when no token of the input matches it.
std::vector<TokenLinkScore> search_token_links(const Trace& trace, const std::string& query_pattern,
                                               const std::string& key_pattern);

}  // namespace atlas
