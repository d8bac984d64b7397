// Attention comparison of two runs (attention_compare.h).
#include "core/analysis/attention_compare.h"

#include <algorithm>
#include <cmath>

#include "core/tensor/error.h"

namespace atlas {

namespace {

const Tensor* dense_map(const Trace& t, const AttentionMap& m) {
  if (!m.dense) return nullptr;
  const TracedArray* a = t.find(m.array);
  return a && a->tensor.shape.size() == 3 ? &a->tensor : nullptr;
}

std::string shape_text(const Shape& s) {
  std::string out;
  for (int64_t d : s) out += (out.empty() ? "" : " x ") + std::to_string(d);
  return out;
}

}  // namespace

std::vector<HeadDifference> compare_attention(const Trace& a, const Trace& b) {
  std::vector<HeadDifference> out;
  std::string mismatch;
  for (const AttentionMap& m : a.attention_maps) {
    const Tensor* ta = dense_map(a, m);
    const AttentionMap* mb = b.attention_map(m.array);
    const Tensor* tb = mb ? dense_map(b, *mb) : nullptr;
    if (!ta || !tb) continue;
    if (ta->shape != tb->shape) {
      if (mismatch.empty())
        mismatch = m.array + " is " + shape_text(ta->shape) + " in A but " + shape_text(tb->shape) + " in B";
      continue;
    }
    const int64_t H = ta->shape[0], lq = ta->shape[1], lk = ta->shape[2];
    for (int64_t h = 0; h < H; ++h) {
      HeadDifference d;
      d.map = m;
      d.head = h;
      double tv = 0;
      for (int64_t i = 0; i < lq; ++i) {
        double row = 0;
        for (int64_t j = 0; j < lk; ++j) {
          const size_t at = size_t((h * lq + i) * lk + j);
          const double diff = std::fabs(double(ta->data[at]) - double(tb->data[at]));
          row += diff;
          d.max_abs = std::max(d.max_abs, diff);
        }
        tv += 0.5 * row;
      }
      d.mean_tv = lq > 0 ? tv / double(lq) : 0.0;
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
  const Tensor* ta = ma ? dense_map(a, *ma) : nullptr;
  const Tensor* tb = mb ? dense_map(b, *mb) : nullptr;
  if (!ta || !tb) throw AtlasError("compare: " + array + " is not a dense map of both runs");
  if (ta->shape != tb->shape)
    throw AtlasError("compare: " + array + " is " + shape_text(ta->shape) + " in A but " + shape_text(tb->shape) +
                     " in B (the difference needs inputs with the same number of tokens)");
  if (head < 0 || head >= ta->shape[0])
    throw AtlasError("compare: head " + std::to_string(head) + " does not exist; the map has " +
                     std::to_string(ta->shape[0]) + " heads");
  const int64_t lq = ta->shape[1], lk = ta->shape[2];
  Tensor d({lq, lk});
  for (int64_t k = 0; k < lq * lk; ++k)
    d.data[size_t(k)] = ta->data[size_t(head * lq * lk + k)] - tb->data[size_t(head * lq * lk + k)];
  return d;
}

}  // namespace atlas
