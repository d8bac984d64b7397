#pragma once
// Query-key embedding (AttentionViz, Yeh et al. 2023): the query and key vectors of one head
// over the input, placed in one 2-D plot by a joint PCA, so that queries near keys are the pairs
// the head matches. Before the PCA the keys are translated so their centroid is the queries'
// and the queries and keys are scaled by s and 1/s so their mean norms are equal: neither
// changes the head's attention (a translation of the keys adds the same score to a whole
// softmax row; q.k is unchanged by s and 1/s), but it keeps the two clouds from lying apart for
// reasons the attention ignores.
//
// The projected queries and keys come from a run traced with TraceOptions::qk (after RoPE; for
// grouped-query models the traced keys may hold one column block per key/value head, and query
// head h reads key head h / group size).
#include <cstdint>
#include <vector>

#include "core/model/trace.h"

namespace atlas {

struct QkEmbedding {
  int64_t queries = 0, keys = 0;
  std::vector<float> points;   // [queries + keys, 2]: queries first, then keys
  double explained[2] = {};    // share of the joint variance on each component
};

// The embedding of `head` of the map `array` (its q and k companions).
// Throws AtlasError when they were not traced (naming the option) or the head is absent.
QkEmbedding qk_embedding(const Trace& trace, const std::string& array, int64_t head);

// The same from plain matrices (the unit the tests check): q [nq, d], k [nk, d], row-major.
QkEmbedding qk_embedding(const std::vector<float>& q, const std::vector<float>& k, int64_t nq, int64_t nk, int64_t d);

}  // namespace atlas
