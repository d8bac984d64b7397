// Head statistics of a trace's self-attention maps (head_statistics.h).
#include "core/analysis/head_statistics.h"

#include <algorithm>
#include <cmath>

#include "core/analysis/stored_rows.h"
#include "core/tensor/error.h"
#include "core/tensor/random.h"

namespace atlas {

const char* head_statistic_name(HeadStatistic s) {
  switch (s) {
    case HeadStatistic::Entropy: return "entropy";
    case HeadStatistic::Distance: return "distance";
    case HeadStatistic::Sink: return "sink";
    case HeadStatistic::PreviousToken: return "previous_token";
    case HeadStatistic::DuplicateToken: return "duplicate_token";
    case HeadStatistic::Induction: return "induction";
  }
  return "?";
}

const char* head_statistic_meaning(HeadStatistic s) {
  switch (s) {
    case HeadStatistic::Entropy: return "mean entropy of a row (nats)";
    case HeadStatistic::Distance: return "mean distance |i - j| (tokens)";
    case HeadStatistic::Sink: return "mean weight on the first key";
    case HeadStatistic::PreviousToken: return "mean weight on the previous token";
    case HeadStatistic::DuplicateToken: return "mean weight on earlier copies";
    case HeadStatistic::Induction: return "mean weight after earlier copies";
  }
  return "?";
}

namespace {

// Accumulates the six means over one head's rows; `row(i, visit)` calls visit(j, p) for every
// stored weight of row i (all keys for a dense map, the nonzeros for CSR).
template <class Row>
void accumulate(const MapRows& m, const std::vector<int32_t>& tokens, Row&& row, double out[kHeadStatisticCount]) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  auto token = [&](int64_t pos) { return pos >= 0 && pos < n ? tokens[static_cast<size_t>(pos)] : INT32_MIN; };
  double sum[kHeadStatisticCount] = {};
  int64_t count[kHeadStatisticCount] = {};
  for (int64_t i = 0; i < m.lq; ++i) {
    const int64_t qpos = m.q0 + i;
    const int32_t qtok = token(qpos);
    double total = 0, entropy = 0, distance = 0, first = 0, prev = 0, dup = 0, ind = 0;
    bool has_prev = false, has_dup = false, has_ind = false;
    row(i, [&](int64_t j, float pf) {
      const double p = pf;
      const int64_t kpos = m.k0 + j;
      if (kpos == qpos - 1) has_prev = true;
      const bool dup_key = kpos < qpos && token(kpos) == qtok;
      const bool ind_key = kpos >= 1 && kpos <= qpos && token(kpos - 1) == qtok;
      has_dup |= dup_key;
      has_ind |= ind_key;
      if (!(p > 0)) return;
      total += p;
      entropy -= p * std::log(p);
      distance += p * double(std::llabs(qpos - kpos));
      if (j == 0) first = p;
      if (kpos == qpos - 1) prev = p;
      if (dup_key) dup += p;
      if (ind_key) ind += p;
    });
    if (!(total > 0)) continue;  // a row that sees no key
    const double v[kHeadStatisticCount] = {entropy, distance, first, prev, dup, ind};
    const bool in[kHeadStatisticCount] = {true, true, true, has_prev, has_dup, has_ind};
    for (int s = 0; s < kHeadStatisticCount; ++s)
      if (in[s]) {
        sum[s] += v[s];
        ++count[s];
      }
  }
  for (int s = 0; s < kHeadStatisticCount; ++s) out[s] = count[s] ? sum[s] / double(count[s]) : 0.0;
}

}  // namespace

void map_head_statistics(const float* p, const MapRows& m, const std::vector<int32_t>& tokens,
                         double out[kHeadStatisticCount]) {
  accumulate(m, tokens, [&](int64_t i, auto&& visit) {
    for (int64_t j = 0; j < m.lk; ++j) visit(j, p[i * m.lk + j]);
  }, out);
}

double attention_sink(const float* p, int64_t lq, int64_t lk) {
  double sum = 0;
  int64_t rows = 0;
  for (int64_t i = 0; i < lq && lk > 0; ++i) {
    double total = 0;
    for (int64_t j = 0; j < lk; ++j) total += p[i * lk + j] > 0 ? p[i * lk + j] : 0.0f;
    if (!(total > 0)) continue;
    sum += p[i * lk] > 0 ? p[i * lk] : 0.0f;
    ++rows;
  }
  return rows ? sum / double(rows) : 0.0;
}

bool head_statistics_apply(const AttentionMap& m) {
  return m.kind != AttentionMapKind::Cross && m.queries.side == m.keys.side &&
         m.queries.side != TokenSide::Positions && StoredRows::stored(m);
}

std::vector<HeadStatisticsRow> head_statistics(const Trace& trace) {
  std::vector<HeadStatisticsRow> rows;
  for (const AttentionMap& m : trace.attention_maps) {
    if (!head_statistics_apply(m)) continue;
    const std::vector<int32_t> tokens =
        token_ids(m.queries.side == TokenSide::Source ? trace.source_tokens : trace.target_tokens);
    const MapRows shape{m.queries.count, m.keys.count, m.queries.begin, m.keys.begin};
    const StoredRows stored(trace, m);  // checks the arrays against the map
    for (int64_t h = 0; h < m.heads; ++h) {
      HeadStatisticsRow r;
      r.map = m;
      r.head = h;
      if (m.dense) {  // the head's [Lq, Lk] block
        map_head_statistics(stored.row(h, 0).weights, shape, tokens, r.value);
      } else {  // CSR: each row's nonzeros; on demand: each computed row
        accumulate(shape, tokens, [&](int64_t i, auto&& visit) {
          const RowWeights row = stored.row(h, i);
          for (int64_t t = 0; t < row.count; ++t) visit(row.key(t), row.weights[t]);
        }, r.value);
      }
      rows.push_back(std::move(r));
    }
  }
  return rows;
}

std::vector<HeadStatisticsFamily> head_statistics_families(const std::vector<HeadStatisticsRow>& rows) {
  std::vector<HeadStatisticsFamily> out;  // in catalogue order
  auto layer_of = [](const HeadStatisticsRow& r) { return r.map.step > 0 ? r.map.step - 1 : r.map.layer; };
  auto name_of = [](const AttentionMap& m) {
    return m.stack + "." + m.sublayer + (m.segment >= 0 ? ".seg" + std::to_string(m.segment) : "");
  };
  for (const auto& r : rows) {
    const std::string name = name_of(r.map);
    auto f = std::find_if(out.begin(), out.end(), [&](const auto& x) { return x.name == name; });
    if (f == out.end()) {
      out.push_back({name, r.map, r.map.step > 0, 0, 0, {}});
      f = out.end() - 1;
    }
    f->layers = std::max(f->layers, layer_of(r) + 1);
    f->heads = std::max(f->heads, r.head + 1);
  }
  for (auto& f : out)
    for (auto& t : f.table) t.assign(static_cast<size_t>(f.layers * f.heads), 0.0);
  for (const auto& r : rows) {
    auto& f = *std::find_if(out.begin(), out.end(), [&](const auto& x) { return x.name == name_of(r.map); });
    for (int s = 0; s < kHeadStatisticCount; ++s)
      f.table[s][static_cast<size_t>(layer_of(r) * f.heads + r.head)] = r.value[s];
  }
  return out;
}

std::vector<int32_t> induction_probe_tokens(int64_t n, int32_t first_id, int32_t vocab, uint64_t seed) {
  if (n < 2 || vocab - first_id < 2)
    throw AtlasError("induction probe: needs at least 2 tokens drawn from at least 2 ids");
  Rng rng(seed);
  std::vector<int32_t> ids;
  for (int64_t i = 0; i < n; ++i)
    ids.push_back(first_id + static_cast<int32_t>(rng.next() % uint64_t(vocab - first_id)));
  for (int64_t i = 0; i < n; ++i) ids.push_back(ids[static_cast<size_t>(i)]);
  return ids;
}

}  // namespace atlas
