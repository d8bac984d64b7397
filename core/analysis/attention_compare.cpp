// Attention comparison of two runs (attention_compare.h).
#include "core/analysis/attention_compare.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/analysis/stored_rows.h"
#include "core/tensor/error.h"

namespace atlas {

namespace {

std::string shape_text(const Shape& s) {
  std::string out;
  for (int64_t d : s) out += (out.empty() ? "" : " x ") + std::to_string(d);
  return out;
}

Shape map_shape(const AttentionMap& m) { return {m.heads, m.queries.count, m.keys.count}; }

// Row i of head h of both runs, key by key in ascending order: visit(j, weight in A, weight in
// B), a key stored by one side only weighing 0 on the other (outside a sparse pattern).
template <class Visit>
void merged_row(const RowWeights& a, const RowWeights& b, Visit&& visit) {
  int64_t s = 0, t = 0;
  while (s < a.count || t < b.count) {
    const int64_t ja = s < a.count ? a.key(s) : INT64_MAX, jb = t < b.count ? b.key(t) : INT64_MAX;
    if (ja == jb) {
      visit(ja, a.weights[s++], b.weights[t++]);
    } else if (ja < jb) {
      visit(ja, a.weights[s++], 0.0f);
    } else {
      visit(jb, 0.0f, b.weights[t++]);
    }
  }
}

}  // namespace

std::vector<HeadDifference> compare_attention(const Trace& a, const Trace& b) {
  std::vector<HeadDifference> out;
  std::string mismatch;
  for (const AttentionMap& m : a.attention_maps) {
    const AttentionMap* mb = b.attention_map(m.array);
    if (!mb || !StoredRows::stored(m) || !StoredRows::stored(*mb)) continue;
    if (map_shape(m) != map_shape(*mb)) {
      if (mismatch.empty())
        mismatch = m.array + " is " + shape_text(map_shape(m)) + " in A but " + shape_text(map_shape(*mb)) + " in B";
      continue;
    }
    const StoredRows ra(a, m), rb(b, *mb);  // dense or CSR, either side
    for (int64_t h = 0; h < ra.heads(); ++h) {
      HeadDifference d;
      d.map = m;
      d.head = h;
      double tv = 0;
      for (int64_t i = 0; i < ra.queries(); ++i) {
        double row = 0;
        merged_row(ra.row(h, i), rb.row(h, i), [&](int64_t, float wa, float wb) {
          const double diff = std::fabs(double(wa) - double(wb));
          row += diff;
          d.max_abs = std::max(d.max_abs, diff);
        });
        tv += 0.5 * row;
      }
      d.mean_tv = ra.queries() > 0 ? tv / double(ra.queries()) : 0.0;
      out.push_back(d);
    }
  }
  if (out.empty())
    throw AtlasError(mismatch.empty()
                         ? "the two runs have no attention map in common to compare"
                         : "the two runs' attention cannot be compared: " + mismatch +
                               " (the difference needs inputs with the same number of tokens)");
  return out;
}

std::vector<HeadTable> head_difference_tables(const std::vector<HeadDifference>& rows) {
  std::vector<HeadValue> values;
  for (const auto& r : rows) values.push_back({&r.map, r.head, r.mean_tv});
  return head_tables(values);
}

Tensor attention_difference(const Trace& a, const Trace& b, const std::string& array, int64_t head) {
  const AttentionMap* ma = a.attention_map(array);
  const AttentionMap* mb = b.attention_map(array);
  if (!ma || !mb || !StoredRows::stored(*ma) || !StoredRows::stored(*mb))
    throw AtlasError("compare: " + array + " is not a stored map of both runs");
  if (map_shape(*ma) != map_shape(*mb))
    throw AtlasError("compare: " + array + " is " + shape_text(map_shape(*ma)) + " in A but " +
                     shape_text(map_shape(*mb)) + " in B (the difference needs inputs with the same number of tokens)");
  if (head < 0 || head >= ma->heads)
    throw AtlasError("compare: head " + std::to_string(head) + " does not exist; the map has " +
                     std::to_string(ma->heads) + " heads");
  const StoredRows ra(a, *ma), rb(b, *mb);
  const int64_t lq = ra.queries(), lk = ra.keys();
  Tensor d({lq, lk});
  for (int64_t i = 0; i < lq; ++i)
    merged_row(ra.row(head, i), rb.row(head, i),
               [&](int64_t j, float wa, float wb) { d.data[size_t(i * lk + j)] = wa - wb; });
  return d;
}

}  // namespace atlas
