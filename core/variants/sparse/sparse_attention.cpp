// Sparse softmax attention over CSR nonzeros (seed 000 "Sparse Transformer",
// "Image Transformer"):  out_i = sum_{j in S(i)} exp(s_ij - m_i) v_j / sum_{j in S(i)} exp(s_ij - m_i),
// s_ij = scale q_i . k_j, m_i = max_{j in S(i)} s_ij. Work O(nnz d), memory O(nnz) per head.
#include "core/variants/sparse/sparse_attention.h"

#include <algorithm>
#include <cmath>

#include "core/backend/module_op.h"
#include "core/model/array_name_parts.h"
#include "core/model/forward_pass.h"
#include "core/tensor/error.h"
#include "core/variants/sparse/block_sparse_attention.h"

namespace atlas {

void check_sparse_attention_shapes(const Shape& q, const Shape& k, const Shape& v, int heads,
                                   const std::vector<CsrPattern>& patterns) {
  const int64_t H = heads;
  if (H < 1 || q.size() != 2 || k.size() != 2 || v.size() != 2 || q[1] != k[1] || q[1] % H ||
      v[1] % H || k[0] != v[0])
    throw AtlasError("sparse_attention: shapes q " + shape_str(q) + " k " + shape_str(k) + " v " +
                     shape_str(v) + " do not fit " + std::to_string(H) + " heads");
  if (static_cast<int64_t>(patterns.size()) != H)
    throw AtlasError("sparse_attention: need one pattern per head");
  for (const auto& p : patterns) {
    if (p.rows != q[0] || p.cols != k[0] || static_cast<int64_t>(p.indptr.size()) != p.rows + 1)
      throw AtlasError("sparse_attention: pattern is " + std::to_string(p.rows) + "x" +
                       std::to_string(p.cols) + ", attention is " + std::to_string(q[0]) + "x" +
                       std::to_string(k[0]));
    if (p.indptr.front() != 0 || p.indptr.back() != static_cast<int64_t>(p.indices.size()) ||
        !std::is_sorted(p.indptr.begin(), p.indptr.end()))
      throw AtlasError("sparse_attention: pattern row pointers do not run from 0 to its " +
                       std::to_string(p.indices.size()) + " indices");
  }
}

void sparse_attention_row(const float* q, const float* k, const float* v, int64_t heads, int64_t dk, int64_t dv,
                          float scale, const CsrPattern& p, int64_t h, int64_t i, float* out_row, float* probs,
                          std::vector<float>& s) {
  const int64_t b = p.indptr[size_t(i)], e = p.indptr[size_t(i) + 1];
  if (b == e) return;  // no key: zero output
  s.resize(size_t(e - b));
  const float* qi = q + (i * heads + h) * dk;
  float mx = -INFINITY;
  for (int64_t n = b; n < e; ++n) {
    const float* kj = k + (int64_t(p.indices[size_t(n)]) * heads + h) * dk;
    float dot = 0;
    for (int64_t t = 0; t < dk; ++t) dot += qi[t] * kj[t];
    s[size_t(n - b)] = dot * scale;
    mx = std::max(mx, s[size_t(n - b)]);
  }
  float sum = 0;
  for (float& x : s) sum += (x = std::exp(x - mx));
  const float inv = 1.0f / sum;
  for (int64_t n = b; n < e; ++n) {
    const float w = s[size_t(n - b)] * inv;
    if (probs) probs[n] = w;
    const float* vj = v + (int64_t(p.indices[size_t(n)]) * heads + h) * dv;
    for (int64_t t = 0; t < dv; ++t) out_row[t] += w * vj[t];
  }
}

Tensor sparse_attention(const Tensor& q, const Tensor& k, const Tensor& v, int heads, float scale,
                        const std::vector<CsrPattern>& patterns,
                        std::vector<std::vector<float>>* probs) {
  check_sparse_attention_shapes(q.shape, k.shape, v.shape, heads, patterns);
  const int64_t H = heads;
  const int64_t L = q.shape[0], dk = q.shape[1] / H, dv = v.shape[1] / H;
  Tensor out({L, H * dv});
  if (probs) {
    probs->assign(static_cast<size_t>(H), {});
    for (int64_t h = 0; h < H; ++h) (*probs)[size_t(h)].resize(size_t(patterns[size_t(h)].nnz()));
  }
  for (int64_t h = 0; h < H; ++h) {
    float* P = probs ? (*probs)[size_t(h)].data() : nullptr;
#pragma omp parallel
    {
      std::vector<float> s;  // scores of one row, reused
#pragma omp for schedule(dynamic, 64)
      for (int64_t i = 0; i < L; ++i)
        sparse_attention_row(q.data.data(), k.data.data(), v.data.data(), H, dk, dv, scale, patterns[size_t(h)], h, i,
                             out.data.data() + (i * H + h) * dv, P, s);
    }
  }
  return out;
}

// ---- The sparse_attention module op (sparse_attention_op.h) ----

namespace {

std::vector<Tensor> sparse_attention_on_host(const std::vector<Tensor>& in,
                                             const SparseOpArgs& args) {
  std::vector<std::vector<float>> probs;
  std::vector<Tensor> out = {block_sparse_attention(in.at(0), in.at(1), in.at(2), args.heads,
                                                    args.scale, *args.patterns,
                                                    args.want_probs ? &probs : nullptr)};
  if (args.want_probs) {
    Tensor all({0});
    for (const auto& p : probs) all.data.insert(all.data.end(), p.begin(), p.end());
    all.shape = {all.numel()};
    out.push_back(std::move(all));
  }
  return out;
}

bool uses_sparse_attention(const ModelConfig& c) { return c.sparse() != nullptr; }

constexpr ModuleOpOf<SparseOpArgs> kSparseAttention =
    module_op<SparseOpArgs, sparse_attention_on_host>(
        "sparse_attention", "sparse CSR attention computed on the host", uses_sparse_attention);
const RegisterModuleOp kRegisterSparseAttention(kSparseAttention.op);

}  // namespace

const ModuleOp& sparse_attention_op() { return kSparseAttention.op; }

SparseAttentionResult sparse_attention(Backend& be, const DTensor& q, const DTensor& k,
                                       const DTensor& v, int heads, float scale,
                                       const std::vector<CsrPattern>& patterns, bool want_probs) {
  check_sparse_attention_shapes(q.shape, k.shape, v.shape, heads, patterns);
  const std::vector<DTensor> out =
      run_op(be, kSparseAttention, {q, k, v}, SparseOpArgs{heads, scale, &patterns, want_probs});
  SparseAttentionResult r;
  r.out = out.at(0);
  if (want_probs) r.probs = out.at(1);
  return r;
}

std::vector<CsrPattern> layer_patterns(const SparseConfig& s, int64_t length, int64_t layer,
                                       int64_t n_heads, const AttentionMask& mask) {
  std::vector<CsrPattern> out;
  out.reserve(size_t(n_heads));
  const bool any_mask = mask.causal || !mask.key_valid.empty() || !mask.allowed.empty();
  // The mask's part of the patterns' recipe: its rule and the padded keys.
  std::string mask_recipe = " mask " + std::to_string(int(mask.causal)) + " " + std::to_string(mask.causal_offset) +
                            " " + std::to_string(mask.window) + " padding";
  for (size_t j = 0; j < mask.key_valid.size(); ++j)
    if (!mask.key_valid[j]) mask_recipe += " " + std::to_string(j);
  for (int64_t h = 0; h < n_heads; ++h) {
    // Heads with identical patterns share the work (all of them unless per-head choices).
    PatternRows rows(s, length, layer, h, mask.causal);
    const std::string recipe = rows.recipe();
    bool reused = false;
    for (int64_t g = 0; g < h && !reused; ++g)
      if (PatternRows(s, length, layer, g, mask.causal).recipe() == recipe) {
        out.push_back(out[size_t(g)]);
        reused = true;
      }
    if (reused) continue;
    CsrPattern p = build_csr(rows);
    p.recipe = mask.allowed.empty() ? recipe + mask_recipe : "";
    if (any_mask) {  // keep only keys the mask allows (causal, padding), compacting in place
      int64_t w = 0;
      for (int64_t i = 0; i < p.rows; ++i) {
        const int64_t b = p.indptr[size_t(i)], e = p.indptr[size_t(i) + 1];
        p.indptr[size_t(i)] = w;
        for (int64_t n = b; n < e; ++n)
          if (mask.is_allowed(i, p.indices[size_t(n)], p.cols)) p.indices[size_t(w++)] = p.indices[size_t(n)];
      }
      p.indptr[size_t(p.rows)] = w;
      p.indices.resize(size_t(w));
    }
    out.push_back(std::move(p));
  }
  return out;
}

void trace_sparse_attention(Trace& trace, const std::string& name,
                            const std::vector<CsrPattern>& heads,
                            const std::vector<std::vector<float>>& probs, bool want_dense,
                            bool want_mask) {
  // Nothing to trace: over the dense limit, and CSR indices that float32 can't hold exactly
  // (the union has at least the nonzeros of its largest head).
  int64_t largest = 0;
  for (const CsrPattern& p : heads) largest = std::max(largest, p.nnz());
  const bool dense_copy = sparse_dense_copy_traced(int64_t(heads.size()), heads.at(0).rows);
  if ((!want_dense || largest >= kMaxTracedIndex) && !dense_copy) return;
  const CsrPattern u = csr_union(heads);
  const int64_t H = static_cast<int64_t>(heads.size()), L = u.rows, nnz = u.nnz();
  if (want_dense && nnz < kMaxTracedIndex) {  // want_dense = probabilities were computed
    Tensor indptr({L + 1}), indices({nnz}), values({H, nnz}), allowed({H, nnz});
    for (int64_t i = 0; i <= L; ++i) indptr.data[size_t(i)] = float(u.indptr[size_t(i)]);
    for (int64_t n = 0; n < nnz; ++n) indices.data[size_t(n)] = float(u.indices[size_t(n)]);
    for (int64_t h = 0; h < H; ++h) {
      const CsrPattern& p = heads[size_t(h)];
      // Walk the head's row inside the union's row (both ascending).
      for (int64_t i = 0; i < L; ++i) {
        int64_t a = p.indptr[size_t(i)];
        const int64_t ae = p.indptr[size_t(i) + 1];
        for (int64_t n = u.indptr[size_t(i)]; n < u.indptr[size_t(i) + 1] && a < ae; ++n)
          if (p.indices[size_t(a)] == u.indices[size_t(n)]) {
            values.data[size_t(h * nnz + n)] = probs[size_t(h)][size_t(a)];
            allowed.data[size_t(h * nnz + n)] = 1.0f;
            ++a;
          }
      }
    }
    trace.add(companion_array_name(name, Companion::Indptr), "sparse attention row pointers, CSR over the union of heads [Lq + 1]",
              std::move(indptr), DType::I32);
    trace.add(companion_array_name(name, Companion::Indices), "sparse attention key index of each nonzero, ascending per row [nnz]",
              std::move(indices), DType::I32);
    trace.add(companion_array_name(name, Companion::Values), "sparse attention probabilities per head at each nonzero [heads, nnz]",
              std::move(values));
    const std::vector<size_t> first = first_equal_patterns(heads);
    const bool one_pattern = std::all_of(first.begin(), first.end(), [](size_t f) { return f == 0; });
    if (!one_pattern)  // readers take a missing `allowed` companion as every nonzero being every head's
      trace.add(companion_array_name(name, Companion::Allowed), "1 where the nonzero belongs to the head's own pattern [heads, nnz]",
                std::move(allowed), DType::I32);
  }
  if (!dense_copy) return;
  if (want_mask) {
    Tensor m({L, L});
    for (int64_t i = 0; i < L; ++i)
      for (int64_t n = u.indptr[size_t(i)]; n < u.indptr[size_t(i) + 1]; ++n)
        m.data[size_t(i * L + u.indices[size_t(n)])] = 1.0f;
    trace.add(companion_array_name(name, Companion::Mask), "allowed keys (1) per query, union of heads [Lq, Lk]", std::move(m),
              DType::I32);
  }
  if (want_dense) {
    Tensor d({H, L, L});
    for (int64_t h = 0; h < H; ++h) {
      const CsrPattern& p = heads[size_t(h)];
      for (int64_t i = 0; i < L; ++i)
        for (int64_t n = p.indptr[size_t(i)]; n < p.indptr[size_t(i) + 1]; ++n)
          d.data[size_t((h * L + i) * L + p.indices[size_t(n)])] = probs[size_t(h)][size_t(n)];
    }
    trace.add(name, "attention probabilities [heads, Lq, Lk] (0 outside the sparse pattern)",
              std::move(d));
  }
}

DTensor sparse_attention_layer(ForwardPass& fp, const DTensor& q, const DTensor& k,
                               const DTensor& v, const std::string& prefix,
                               const std::string& traced_name, const AttentionMask& mask) {
  const ModelConfig& c = fp.config();
  const int64_t L = q.shape[0];
  std::vector<CsrPattern> heads =
      layer_patterns(*c.sparse(), L, layer_index_of(prefix), c.n_heads, mask);
  const TraceOptions& want = fp.options().trace;
  std::vector<std::vector<float>> probs;
  Backend& be = fp.backend();
  SparseAttentionResult r =
      sparse_attention(be, q, k, v, static_cast<int>(c.n_heads),
                       1.0f / std::sqrt(static_cast<float>(c.d_head())), heads, want.attention);
  if (want.attention) {  // per-head slices of the concatenated values
    const Tensor all = be.download(r.probs);
    size_t at = 0;
    for (const CsrPattern& p : heads) {
      const size_t n = static_cast<size_t>(p.nnz());
      probs.emplace_back(all.data.begin() + long(at), all.data.begin() + long(at + n));
      at += n;
    }
  }
  if (want.attention || want.masks)
    trace_sparse_attention(fp.trace(), traced_name, heads, probs, want.attention, want.masks);
  return r.out;
}

}  // namespace atlas
