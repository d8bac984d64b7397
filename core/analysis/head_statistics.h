#pragma once
// Head statistics: what each attention head does, measured on the maps of a trace.
// For every self-attention map of the catalogue (per layer, Universal step and Transformer-XL
// segment; dense or CSR) and every head, with p_ij the weight of query i on key j, positions
// pos(i), pos(j) in the stack's token list, tokens t(.) and "rows" the query rows that see any
// key (sum_j p_ij > 0):
//   entropy          mean over rows of -sum_j p_ij ln p_ij                          (nats)
//   distance         mean over rows of sum_j p_ij |pos(i) - pos(j)|                 (tokens)
//   sink             mean over rows of p_i0, the weight on the map's first key
//   previous_token   mean over rows with a key at pos(i) - 1 of that key's weight
//   duplicate_token  mean over rows with an earlier key of the same token id (pos(j) < pos(i),
//                    t(j) = t(i)) of the weight on those keys
//   induction        mean over rows with a key j, 1 <= pos(j) <= pos(i), whose previous token
//                    is the query's (t(pos(j) - 1) = t(i), pos(j) - 1 < pos(i)) of the weight on
//                    those keys: the token after an earlier occurrence of the current one
// On TransformerLens's probe, a random sequence repeated twice (induction_probe_tokens), the
// induction score of the second half is its mean of the diagonal at offset -(n - 1), and the
// duplicate-token score that at offset -n; both definitions above reduce to those there.
// Cross-attention is left out (positions of two token lists are not comparable).
#include <cstdint>
#include <string>
#include <vector>

#include "core/model/attention_map.h"
#include "core/model/trace.h"

namespace atlas {

enum class HeadStatistic { Entropy, Distance, Sink, PreviousToken, DuplicateToken, Induction };
constexpr int kHeadStatisticCount = 6;
const char* head_statistic_name(HeadStatistic s);  // "entropy", "previous_token", ...
const char* head_statistic_meaning(HeadStatistic s);  // a colour-bar title, with units

struct HeadStatisticsRow {
  AttentionMap map;  // the catalogue entry (stack, sub-layer, layer, segment, step)
  int64_t head = 0;
  double value[kHeadStatisticCount] = {};
  double operator[](HeadStatistic s) const { return value[static_cast<int>(s)]; }
};

// Whether a catalogue map is measured: self-attention over one token list, stored dense or CSR.
bool head_statistics_apply(const AttentionMap& map);

// One row per (self-attention map, head), in catalogue order then head order.
std::vector<HeadStatisticsRow> head_statistics(const Trace& trace);

// The rows of one map family (stack, sub-layer and Transformer-XL segment) as [layers, heads]
// tables, a Universal Transformer's step n at row n - 1: what `atlas heads --npy` writes and the
// head statistics panel draws.
struct HeadStatisticsFamily {
  std::string name;  // "decoder.self_attn", "decoder.self_attn.seg1"
  AttentionMap map;  // one map of the family: its stack, sub-layer and segment
  bool steps = false;
  int64_t layers = 0, heads = 0;
  std::vector<double> table[kHeadStatisticCount];  // [layers x heads] each; 0 where no map
};
std::vector<HeadStatisticsFamily> head_statistics_families(const std::vector<HeadStatisticsRow>& rows);

// The statistics of one head's map, the building block (and the unit the tests check): `p` is
// [lq, lk] row-major; query i is at position q0 + i and key j at k0 + j of `tokens`.
struct MapRows {
  int64_t lq = 0, lk = 0, q0 = 0, k0 = 0;
};
void map_head_statistics(const float* p, const MapRows& shape, const std::vector<int32_t>& tokens,
                         double out[kHeadStatisticCount]);

// The sink statistic alone (cheap: no logarithms), for the model grid's sink column: the mean
// over the rows of `p` [lq, lk] that see any key of the weight on key 0.
double attention_sink(const float* p, int64_t lq, int64_t lk);

// TransformerLens's induction probe: `n` token ids drawn uniformly from [first_id, vocab)
// with a fixed seed, then the same n again (2n tokens).
std::vector<int32_t> induction_probe_tokens(int64_t n, int32_t first_id, int32_t vocab, uint64_t seed);

}  // namespace atlas
