#pragma once
// What a corpus run (corpus_index.h) has accumulated over the documents measured so far: head
// statistics summed exactly per (map, head), the strongest attention links per (map, head), and
// the tokens of the documents those links point into. Every part combines exactly and in any
// order (exact sums, top-K under a total order, unions), so shards merged, or a run stopped
// and resumed, hold the very same state as one uninterrupted pass.
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/analysis/exact_sum.h"
#include "core/analysis/head_statistics.h"
#include "core/model/trace.h"

namespace atlas {

struct CorpusSettings {
  int64_t top = 100;          // links kept per (map, head)
  int64_t max_tokens = 0;     // longer documents are skipped; 0 = the model's max_positions
  bool exclude_self = false;  // leave out a query's link to its own position
  bool operator==(const CorpusSettings&) const = default;
};

// A head of one attention map, ordered as every file lists them: encoder, then decoder, then
// other stacks by name; then sub-layer, Transformer-XL segment, Universal Transformer step,
// layer and head.
struct MapHead {
  int stack_rank = 2;
  std::string stack, sublayer;
  int64_t segment = -1, step = -1, layer = 0, head = 0;
  auto operator<=>(const MapHead&) const = default;
};
MapHead map_head(const AttentionMap& m, int64_t head);
AttentionMap map_of(const MapHead& k);    // the fields above, for attention_array_name and families
std::string map_name(const MapHead& k);   // "decoder.layer1.attn"
int64_t map_layer_row(const MapHead& k);  // layer, or a Universal Transformer's step - 1

struct CorpusHeadRow {
  int64_t documents = 0;  // documents whose trace had this map
  ExactSum sums[kHeadStatisticCount];
  double mean(int statistic) const { return sums[statistic].value() / double(documents); }
};

struct CorpusLink {
  int64_t document = 0;
  int64_t query = 0, key = 0;  // positions in the document's token list (the map's side)
  float weight = 0;
};
// The order of a top-K list: weight descending, then document, query, key ascending.
bool better_link(const CorpusLink& a, const CorpusLink& b);

struct CorpusLinkList {
  TokenSide side = TokenSide::Source;  // the token list query and key positions index
  std::vector<CorpusLink> links;       // best first, at most `top`
};

struct CorpusDocumentTokens {
  std::string text;
  std::vector<std::string> source, target;  // token labels
};

struct CorpusSkip {
  int64_t document = 0;
  std::string reason;  // "40 tokens, over the limit of 12 (--max-tokens)"
};

struct CorpusAccumulator {
  int64_t measured = 0;
  std::vector<CorpusSkip> skipped;  // by document id
  std::map<MapHead, CorpusHeadRow> heads;
  std::map<MapHead, CorpusLinkList> links;
  // The documents the links point into (between checkpoints also some whose links were
  // pushed out since; drop_unreferenced_documents removes those).
  std::map<int64_t, CorpusDocumentTokens> documents;

  // Adds one document's head statistics and offers every link of its self-attention maps (the
  // maps head_statistics measures) to the lists. A query row with fewer than two keys of
  // positive weight is not offered: its weight is 1 by construction and says nothing.
  void add_document(int64_t id, std::string_view text, const Trace& trace,
                    const CorpusSettings& settings);
  void add_skip(int64_t id, std::string reason);
  // Everything of `other`, whose documents are disjoint from this one's; lists keep `top`.
  void merge(const CorpusAccumulator& other, int64_t top);
  std::set<int64_t> referenced_documents() const;
  bool drop_unreferenced_documents();  // true when any was dropped
};

}  // namespace atlas
