// Token search (token_search.h).
#include "core/analysis/token_search.h"

#include <algorithm>
#include <cctype>

#include "core/analysis/stored_rows.h"
#include "core/tensor/error.h"

namespace atlas {

namespace {

// The label without the word marks of the tokenizers, lowercased (ASCII) when `lower`.
std::string normalized(const std::string& label, bool lower) {
  std::string s = label;
  for (bool stripped = true; stripped && !s.empty();) {
    stripped = false;
    for (const std::string mark : {" ", "\u2423", "\u0120", "\u2581", "##"})  // space, ␣, Ġ, ▁, ##
      if (s.compare(0, mark.size(), mark) == 0 && s.size() > mark.size()) {
        s.erase(0, mark.size());
        stripped = true;
      }
  }
  if (lower) std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

std::vector<uint8_t> mask_of(const std::vector<std::string>& labels, const std::string& pattern) {
  std::vector<uint8_t> m(labels.size(), 0);
  for (size_t i = 0; i < labels.size(); ++i) m[i] = token_matches(labels[i], pattern);
  return m;
}

}  // namespace

bool token_matches(const std::string& label, const std::string& pattern, bool ignore_case) {
  if (pattern == "*") return true;
  std::string p = normalized(pattern, ignore_case);
  const bool prefix = !pattern.empty() && pattern.back() == '*';
  if (prefix) p.pop_back();
  const std::string l = normalized(label, ignore_case);
  return prefix ? l.compare(0, p.size(), p) == 0 : l == p;
}

std::vector<int64_t> matching_tokens(const std::vector<TokenInfo>& tokens, const std::string& pattern) {
  std::vector<int64_t> out;
  for (size_t i = 0; i < tokens.size(); ++i)
    if (token_matches(tokens[i].label, pattern)) out.push_back(int64_t(i));
  return out;
}

std::vector<TokenLinkScore> search_token_links(const Trace& trace, const std::string& query_pattern,
                                               const std::string& key_pattern) {
  if (query_pattern.empty() || key_pattern.empty())
    throw AtlasError("token search: give a query and a key pattern (\"*\" for any token)");
  auto none_match = [&](const std::string& p) {
    return matching_tokens(trace.source_tokens, p).empty() && matching_tokens(trace.target_tokens, p).empty();
  };
  for (const std::string& p : {query_pattern, key_pattern})
    if (none_match(p)) throw AtlasError("token search: no token of the input matches \"" + p + "\"");
  std::vector<TokenLinkScore> out;
  for (const AttentionMap& m : trace.attention_maps) {
    if (!StoredRows::stored(m) || m.round >= 0) continue;
    const std::vector<uint8_t> q = mask_of(query_labels(trace, m), query_pattern);
    const std::vector<uint8_t> k = mask_of(key_labels(trace, m), key_pattern);
    if (std::none_of(q.begin(), q.end(), [](uint8_t x) { return x; }) ||
        std::none_of(k.begin(), k.end(), [](uint8_t x) { return x; }))
      continue;
    const StoredRows rows(trace, m);  // dense, or the nonzeros of a sparse map (the rest weigh 0)
    for (int64_t h = 0; h < rows.heads(); ++h) {
      TokenLinkScore s;
      s.map = m;
      s.head = h;
      double total = 0;
      for (int64_t i = 0; i < rows.queries(); ++i) {
        if (!q[size_t(i)]) continue;
        const RowWeights row = rows.row(h, i);
        double mass = 0;
        for (int64_t t = 0; t < row.count; ++t) {
          const int64_t j = row.key(t);
          if (!k[size_t(j)]) continue;
          const double w = row.weights[t];
          mass += w;
          if (w > s.best_weight) {
            s.best_weight = w;
            s.best_query = i;
            s.best_key = j;
          }
        }
        total += mass;
        ++s.queries;
      }
      s.score = s.queries ? total / double(s.queries) : 0.0;
      out.push_back(s);
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.score > y.score; });
  return out;
}

}  // namespace atlas
