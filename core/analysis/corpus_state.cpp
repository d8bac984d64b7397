// The accumulated state of a corpus run (corpus_state.h).
#include "core/analysis/corpus_state.h"

#include <algorithm>

#include "core/analysis/stored_rows.h"
#include "core/tensor/error.h"

namespace atlas {

namespace {

int stack_rank(const std::string& stack) {
  if (stack == "encoder") return 0;
  if (stack == "decoder") return 1;
  return 2;
}

// Inserts `c` into the best-first list when it ranks among the `top` best; true when it did.
bool offer(std::vector<CorpusLink>& list, const CorpusLink& c, int64_t top) {
  if (int64_t(list.size()) >= top && !better_link(c, list.back())) return false;
  list.insert(std::upper_bound(list.begin(), list.end(), c, better_link), c);
  if (int64_t(list.size()) > top) list.pop_back();
  return true;
}

std::vector<std::string> labels_of(const std::vector<TokenInfo>& tokens) {
  std::vector<std::string> out;
  out.reserve(tokens.size());
  for (const TokenInfo& t : tokens) out.push_back(t.label);
  return out;
}

}  // namespace

MapHead map_head(const AttentionMap& m, int64_t head) {
  return {stack_rank(m.stack), m.stack, m.sublayer, m.segment, m.step, m.layer, head};
}

AttentionMap map_of(const MapHead& k) {
  AttentionMap m;
  m.stack = k.stack;
  m.sublayer = k.sublayer;
  m.layer = k.layer;
  m.segment = k.segment;
  m.step = k.step;
  return m;
}

std::string map_name(const MapHead& k) { return attention_array_name(map_of(k)); }

int64_t map_layer_row(const MapHead& k) { return k.step > 0 ? k.step - 1 : k.layer; }

bool better_link(const CorpusLink& a, const CorpusLink& b) {
  if (a.weight != b.weight) return a.weight > b.weight;
  if (a.document != b.document) return a.document < b.document;
  if (a.query != b.query) return a.query < b.query;
  return a.key < b.key;
}

void CorpusAccumulator::add_document(int64_t id, std::string_view text, const Trace& trace,
                                     const CorpusSettings& settings) {
  for (const HeadStatisticsRow& r : head_statistics(trace)) {
    CorpusHeadRow& row = heads[map_head(r.map, r.head)];
    ++row.documents;
    for (int s = 0; s < kHeadStatisticCount; ++s) row.sums[s].add(r.value[s]);
  }
  bool linked = false;
  for (const AttentionMap& m : trace.attention_maps) {
    if (!head_statistics_apply(m)) continue;
    const StoredRows rows(trace, m);
    for (int64_t h = 0; h < m.heads; ++h) {
      CorpusLinkList& list = links[map_head(m, h)];
      list.side = m.queries.side;
      for (int64_t i = 0; i < rows.queries(); ++i) {
        const RowWeights row = rows.row(h, i);
        int64_t keys_seen = 0;
        for (int64_t t = 0; t < row.count; ++t) keys_seen += row.weights[t] > 0;
        if (keys_seen < 2) continue;
        const int64_t query = m.queries.begin + i;
        for (int64_t t = 0; t < row.count; ++t) {
          const float w = row.weights[t];
          const int64_t key = m.keys.begin + row.key(t);
          if (!(w > 0) || (settings.exclude_self && key == query)) continue;
          linked |= offer(list.links, {id, query, key, w}, settings.top);
        }
      }
    }
  }
  ++measured;
  if (linked)
    documents[id] = {std::string(text), labels_of(trace.source_tokens),
                     labels_of(trace.target_tokens)};
}

void CorpusAccumulator::add_skip(int64_t id, std::string reason) {
  const auto at = std::lower_bound(skipped.begin(), skipped.end(), id,
                                   [](const CorpusSkip& s, int64_t d) { return s.document < d; });
  skipped.insert(at, {id, std::move(reason)});
}

void CorpusAccumulator::merge(const CorpusAccumulator& other, int64_t top) {
  measured += other.measured;
  for (const CorpusSkip& s : other.skipped) add_skip(s.document, s.reason);
  for (const auto& [key, row] : other.heads) {
    CorpusHeadRow& mine = heads[key];
    mine.documents += row.documents;
    for (int s = 0; s < kHeadStatisticCount; ++s) mine.sums[s].add(row.sums[s]);
  }
  for (const auto& [key, list] : other.links) {
    CorpusLinkList& mine = links[key];
    mine.side = list.side;
    mine.links.insert(mine.links.end(), list.links.begin(), list.links.end());
    std::sort(mine.links.begin(), mine.links.end(), better_link);
    if (int64_t(mine.links.size()) > top) mine.links.resize(size_t(top));
  }
  for (const auto& [id, doc] : other.documents) documents.emplace(id, doc);
  drop_unreferenced_documents();
}

std::set<int64_t> CorpusAccumulator::referenced_documents() const {
  std::set<int64_t> ids;
  for (const auto& [key, list] : links)
    for (const CorpusLink& l : list.links) ids.insert(l.document);
  return ids;
}

bool CorpusAccumulator::drop_unreferenced_documents() {
  const std::set<int64_t> keep = referenced_documents();
  return std::erase_if(documents, [&](const auto& entry) { return !keep.count(entry.first); }) > 0;
}

}  // namespace atlas
