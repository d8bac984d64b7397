// Questions to a corpus index (corpus_query.h).
#include "core/analysis/corpus_query.h"

#include <algorithm>
#include <set>

#include "core/analysis/token_search.h"
#include "core/tensor/error.h"

namespace atlas {

namespace {

const std::string kSpaceMark = "\u2423";  // "␣": how labels show a space

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

std::string join_list(const std::set<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// A label as it reads in running text: its leading separator (spaces) and the token itself.
struct Piece {
  std::string lead, body;
};

Piece piece_of(const std::string& label, const std::string& token_join) {
  if (token_join == "spaces") {
    if (label.size() > 2 && label.compare(0, 2, "##") == 0) return {"", label.substr(2)};
    return {" ", label};
  }
  const std::string text = replace_all(label, kSpaceMark, " ");
  const size_t body = text.find_first_not_of(' ');
  if (body == std::string::npos) return {"", text};  // a space token: mark the space itself
  return {text.substr(0, body), text.substr(body)};
}

std::string render(const std::vector<std::string>& tokens, int64_t lo, int64_t hi, int64_t query,
                   int64_t key, const std::string& token_join) {
  std::string out;
  for (int64_t t = lo; t <= hi; ++t) {
    Piece p = piece_of(tokens[size_t(t)], token_join);
    if (t == lo) p.lead.clear();  // a window starts at its first token, after "... " or nothing
    if (t == key) p.body = "<<" + p.body + ">>";
    if (t == query) p.body = "[[" + p.body + "]]";
    out += p.lead + p.body;
  }
  return out;
}

}  // namespace

bool corpus_token_matches(const std::string& label, const std::string& wanted) {
  return token_matches(label, wanted, /*ignore_case=*/false);
}

namespace {

// Refuses a --map, --layer or --head that names nothing among `keys` (the maps and heads of
// the links or of the head table), listing what there is.
template <class Keys>
void check_corpus_selection(const Keys& keys, const CorpusLinkQuery& q) {
  std::set<std::string> maps;
  std::set<int64_t> layers;
  int64_t heads = 0;
  for (const auto& [key, value] : keys) {
    maps.insert(map_name(key));
    layers.insert(map_layer_row(key));
    heads = std::max(heads, key.head + 1);
  }
  if (q.map && !maps.count(*q.map))
    throw AtlasError("--map " + *q.map + ": the index holds no such map; it holds " +
                     (maps.empty() ? "none" : join_list(maps)));
  if (q.layer && !layers.count(*q.layer))
    throw AtlasError("--layer " + std::to_string(*q.layer) +
                     ": the index holds no map of that layer (layers 0 to " +
                     std::to_string(layers.empty() ? -1 : *layers.rbegin()) + ")");
  if (q.head && (*q.head < 0 || *q.head >= heads))
    throw AtlasError("--head " + std::to_string(*q.head) + ": the index's maps have heads 0 to " +
                     std::to_string(heads - 1));
}

}  // namespace

void check_head_table_query(const CorpusIndex& index, const CorpusLinkQuery& q) {
  check_corpus_selection(index.state.heads, q);
}

std::vector<CorpusLinkMatch> find_corpus_links(const CorpusIndex& index, const CorpusLinkQuery& q) {
  const CorpusAccumulator& s = index.state;
  check_corpus_selection(s.links, q);
  std::vector<CorpusLinkMatch> out;
  for (const auto& [key, list] : s.links) {
    if ((q.map && map_name(key) != *q.map) || (q.layer && map_layer_row(key) != *q.layer) ||
        (q.head && key.head != *q.head))
      continue;
    for (const CorpusLink& l : list.links) {
      const CorpusDocumentTokens& doc = s.documents.at(l.document);
      const auto& tokens = list.side == TokenSide::Source ? doc.source : doc.target;
      if (q.query_token && !corpus_token_matches(tokens[size_t(l.query)], *q.query_token)) continue;
      if (q.key_token && !corpus_token_matches(tokens[size_t(l.key)], *q.key_token)) continue;
      out.push_back({key, list.side, l});
    }
  }
  std::sort(out.begin(), out.end(), [](const CorpusLinkMatch& a, const CorpusLinkMatch& b) {
    if (a.link.weight != b.link.weight) return a.link.weight > b.link.weight;
    if (a.link.document != b.link.document) return a.link.document < b.link.document;
    if (a.map != b.map) return a.map < b.map;
    if (a.link.query != b.link.query) return a.link.query < b.link.query;
    return a.link.key < b.link.key;
  });
  if (int64_t(out.size()) > q.top) out.resize(size_t(q.top));
  return out;
}

std::string corpus_link_context(const std::vector<std::string>& tokens, int64_t query, int64_t key,
                                int64_t context, const std::string& token_join) {
  const int64_t n = int64_t(tokens.size());
  const int64_t first = std::min(query, key), second = std::max(query, key);
  const int64_t lo1 = std::max<int64_t>(0, first - context), hi1 = std::min(n - 1, first + context);
  const int64_t lo2 = std::max<int64_t>(0, second - context),
                hi2 = std::min(n - 1, second + context);
  std::string out = lo1 > 0 ? "... " : "";
  if (lo2 <= hi1 + 1) {
    out += render(tokens, lo1, hi2, query, key, token_join);
  } else {
    out += render(tokens, lo1, hi1, query, key, token_join) + " ... " +
           render(tokens, lo2, hi2, query, key, token_join);
  }
  return out + (hi2 < n - 1 ? " ..." : "");
}

}  // namespace atlas
