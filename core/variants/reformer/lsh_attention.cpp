// Reformer LSH attention, reversible blocks and chunked feed-forward (seeds 000, 003;
// google/trax layers/research/efficient_attention.py). Equations in lsh_attention.h:
//   h(x) = argmax([x R ; -x R]);  sort by (bucket, position);  chunk c attends to chunks c and
//   c - 1;  o_i = sum_r exp(lse_r(i) - logsumexp_r lse_r(i)) o_r(i).
#include "core/variants/reformer/lsh_attention.h"
#include "core/variants/reformer/lsh_arrays.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/tensor/error.h"
#include "core/model/array_name_parts.h"
#include "core/model/forward_pass.h"
#include "core/tensor/random.h"
#include "core/variants/reformer/reversible_halves.h"
#include "core/variants/sparse/sparse_attention.h"

namespace atlas {
namespace {
constexpr float kSelfLogit = -1e5f;  // trax: self allowed only when nothing else is
}

int64_t lsh_buckets(int64_t configured, int64_t length, int64_t chunk_length) {
  if (configured > 0) return configured;
  return 2 * std::max<int64_t>(1, length / chunk_length);
}

LshParams lsh_params(const LshConfig& lsh, int64_t length, int64_t layer, bool causal,
                     const std::vector<uint8_t>* key_valid) {
  LshParams p;
  p.n_rounds = lsh.n_rounds;
  p.chunk_length = lsh.chunk_length;
  p.n_buckets = lsh_buckets(lsh.n_buckets, length, std::min(p.chunk_length, length));
  p.causal = causal;
  p.seed = lsh.seed;
  p.layer = layer;
  p.key_valid = key_valid;
  return p;
}

Mat lsh_rotation(const LshParams& p, int64_t head, int64_t round, int64_t d) {
  Mat R(d, std::max<int64_t>(0, p.n_buckets / 2));
  Rng rng(p.seed ^ hash_name("lsh/layer" + std::to_string(p.layer) + "/head" +
                             std::to_string(head) + "/round" + std::to_string(round)));
  for (int64_t a = 0; a < R.rows(); ++a)
    for (int64_t b = 0; b < R.cols(); ++b) R(a, b) = static_cast<float>(rng.normal());
  return R;
}

std::vector<int32_t> lsh_hash(const Mat& x, const Mat& R, int64_t n_buckets) {
  std::vector<int32_t> b(static_cast<size_t>(x.rows()), 0);
  if (n_buckets <= 1) return b;
  const Mat proj = x * R;  // [L, n_buckets / 2]
  const int64_t half = n_buckets / 2;
  for (int64_t i = 0; i < x.rows(); ++i) {
    int64_t best = 0;
    float bv = proj(i, 0);
    for (int64_t c = 0; c < half; ++c) {
      if (proj(i, c) > bv) { bv = proj(i, c); best = c; }
      if (-proj(i, c) > bv) { bv = -proj(i, c); best = c + half; }
    }
    b[size_t(i)] = static_cast<int32_t>(best);
  }
  return b;
}

std::vector<int32_t> lsh_key_counts(const Mat& k_unit, const LshParams& p, int64_t head) {
  const int64_t L = k_unit.rows(), m = std::min(p.chunk_length, L), n_chunks = (L + m - 1) / m;
  std::vector<int32_t> counts(size_t(L * L), 0);
  for (int64_t r = 0; r < p.n_rounds; ++r) {
    const std::vector<int32_t> bucket = lsh_hash(k_unit, lsh_rotation(p, head, r, k_unit.cols()), p.n_buckets);
    std::vector<int32_t> order(static_cast<size_t>(L));
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      return bucket[size_t(a)] != bucket[size_t(b)] ? bucket[size_t(a)] < bucket[size_t(b)] : a < b;
    });
    for (int64_t s = 0; s < L; ++s) {  // the visiting rule of lsh_attention_head
      const int64_t i = order[size_t(s)], c = s / m;
      auto visit = [&](int64_t chunk) {
        for (int64_t t = chunk * m, e = std::min(L, chunk * m + m); t < e; ++t) {
          const int64_t j = order[size_t(t)];
          if (p.causal && j > i) continue;
          if (p.key_valid && !(*p.key_valid)[size_t(j)] && j != i) continue;
          ++counts[size_t(i * L + j)];
        }
      };
      visit(c);
      if (n_chunks > 1) visit((c - 1 + n_chunks) % n_chunks);
    }
  }
  return counts;
}

Mat lsh_attention_head(const Mat& qk, const Mat& v, float scale, const LshParams& p,
                       int64_t head, LshHeadTrace* trace) {
  const int64_t L = qk.rows(), d = qk.cols(), dv = v.cols();
  const int64_t m = std::min(p.chunk_length, L), n_chunks = (L + m - 1) / m;
  Mat k = qk;  // shared-QK keys, unit length
  for (int64_t i = 0; i < L; ++i) k.row(i) /= std::max(k.row(i).norm(), 1e-6f);
  std::vector<Mat> outs(size_t(p.n_rounds), Mat::Zero(L, dv));
  std::vector<std::vector<float>> lse(size_t(p.n_rounds), std::vector<float>(size_t(L)));
  // Per query, per round: (key, probability) for the trace.
  std::vector<std::vector<std::pair<int32_t, float>>> rows;
  std::vector<std::vector<size_t>> round_start;
  if (trace) {
    rows.assign(size_t(L), {});
    round_start.assign(size_t(L), std::vector<size_t>(size_t(p.n_rounds) + 1, 0));
    trace->buckets.clear();
    trace->order.clear();
  }
  std::vector<float> logits;
  std::vector<int32_t> keys;
  for (int64_t r = 0; r < p.n_rounds; ++r) {
    const std::vector<int32_t> bucket = lsh_hash(k, lsh_rotation(p, head, r, d), p.n_buckets);
    std::vector<int32_t> order(static_cast<size_t>(L));
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      return bucket[size_t(a)] != bucket[size_t(b)] ? bucket[size_t(a)] < bucket[size_t(b)] : a < b;
    });
    for (int64_t s = 0; s < L; ++s) {
      const int64_t i = order[size_t(s)], c = s / m;
      logits.clear();
      keys.clear();
      auto visit = [&](int64_t chunk) {
        for (int64_t t = chunk * m, e = std::min(L, chunk * m + m); t < e; ++t) {
          const int64_t j = order[size_t(t)];
          if (p.causal && j > i) continue;
          if (p.key_valid && !(*p.key_valid)[size_t(j)] && j != i) continue;
          keys.push_back(int32_t(j));
          logits.push_back(j == i ? kSelfLogit : scale * qk.row(i).dot(k.row(j)));
        }
      };
      visit(c);
      if (n_chunks > 1) visit((c - 1 + n_chunks) % n_chunks);  // first chunk wraps to the last
      float mx = -INFINITY;
      for (float x : logits) mx = std::max(mx, x);
      double sum = 0;
      for (float& x : logits) sum += (x = std::exp(x - mx));
      lse[size_t(r)][size_t(i)] = mx + float(std::log(sum));
      auto o = outs[size_t(r)].row(i);
      for (size_t n = 0; n < keys.size(); ++n) {
        const float w = float(logits[n] / sum);
        o += w * v.row(keys[n]);
        if (trace) rows[size_t(i)].push_back({keys[n], w});
      }
      if (trace) round_start[size_t(i)][size_t(r) + 1] = rows[size_t(i)].size();
    }
    if (trace) {
      trace->buckets.push_back(bucket);
      trace->order.push_back(std::move(order));
    }
  }
  Mat out = Mat::Zero(L, dv);
  std::vector<float> w(size_t(p.n_rounds));
  if (trace) {
    trace->pattern = CsrPattern{};
    trace->pattern.rows = trace->pattern.cols = L;
    trace->pattern.indptr.assign(size_t(L) + 1, 0);
    trace->probs.clear();
  }
  for (int64_t i = 0; i < L; ++i) {
    float mx = -INFINITY;
    for (int64_t r = 0; r < p.n_rounds; ++r) mx = std::max(mx, lse[size_t(r)][size_t(i)]);
    double z = 0;
    for (int64_t r = 0; r < p.n_rounds; ++r) z += std::exp(double(lse[size_t(r)][size_t(i)] - mx));
    for (int64_t r = 0; r < p.n_rounds; ++r) {
      w[size_t(r)] = float(std::exp(double(lse[size_t(r)][size_t(i)] - mx)) / z);
      out.row(i) += w[size_t(r)] * outs[size_t(r)].row(i);
    }
    if (!trace) continue;
    auto& row = rows[size_t(i)];
    for (int64_t r = 0; r < p.n_rounds; ++r)
      for (size_t n = round_start[size_t(i)][size_t(r)]; n < round_start[size_t(i)][size_t(r) + 1]; ++n)
        row[n].second *= w[size_t(r)];
    std::sort(row.begin(), row.end());
    for (size_t n = 0; n < row.size(); ++n) {
      if (n > 0 && row[n].first == row[n - 1].first) {
        trace->probs.back() += row[n].second;  // a key found by several rounds
        continue;
      }
      trace->pattern.indices.push_back(row[n].first);
      trace->probs.push_back(row[n].second);
    }
    trace->pattern.indptr[size_t(i) + 1] = int64_t(trace->pattern.indices.size());
    std::vector<std::pair<int32_t, float>>().swap(row);
  }
  return out;
}

DTensor lsh_attention_layer(ForwardPass& fp, const DTensor& q, const DTensor& v,
                            const std::string& prefix, const std::string& traced_name,
                            const AttentionMask& mask) {
  const ModelConfig& c = fp.config();
  Backend& be = fp.backend();
  be.note_host_compute(Op::LshAttention);
  const Tensor Q = be.download(q), V = be.download(v);
  const int64_t L = Q.shape[0], H = c.n_heads, dk = Q.shape[1] / H, dv = V.shape[1] / H;
  const LshParams p = lsh_params(*c.lsh(), L, layer_index_of(prefix), mask.causal,
                                 mask.key_valid.empty() ? nullptr : &mask.key_valid);
  const bool want = fp.options().trace.attention;
  std::vector<LshHeadTrace> traces(size_t(want ? H : 0));
  Tensor out({L, H * dv});
  ConstMatMap QM = Q.mat(), VM = V.mat();
  MatMap O = out.mat();
  const float scale = 1.0f / std::sqrt(float(dk));
#pragma omp parallel for schedule(static) if (H > 1)
  for (int64_t h = 0; h < H; ++h) {
    Mat qh = QM.middleCols(h * dk, dk), vh = VM.middleCols(h * dv, dv);
    O.middleCols(h * dv, dv) = lsh_attention_head(qh, vh, scale, p, h, want ? &traces[size_t(h)] : nullptr);
  }
  if (want) {
    Trace& t = fp.trace();
    for (int64_t r = 0; r < p.n_rounds; ++r) {
      Tensor b({H, L}), o({H, L});
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < L; ++i) {
          b.data[size_t(h * L + i)] = float(traces[size_t(h)].buckets[size_t(r)][size_t(i)]);
          o.data[size_t(h * L + i)] = float(traces[size_t(h)].order[size_t(r)][size_t(i)]);
        }
      t.add(lsh_arrays::round_buckets(traced_name, r), "LSH bucket of every position, per head [heads, L]", std::move(b), DType::I32);
      t.add(lsh_arrays::round_order(traced_name, r), "positions sorted by (bucket, position), per head [heads, L]", std::move(o), DType::I32);
    }
    const int64_t m = std::min(p.chunk_length, L), n_chunks = (L + m - 1) / m;
    Tensor ch({n_chunks + 1});
    for (int64_t n = 0; n <= n_chunks; ++n) ch.data[size_t(n)] = float(std::min(L, n * m));
    t.add(lsh_arrays::chunks(traced_name), "chunk boundaries in sorted order [n_chunks + 1]", std::move(ch), DType::I32);
    std::vector<CsrPattern> heads;
    std::vector<std::vector<float>> probs;
    for (auto& tr : traces) {
      heads.push_back(std::move(tr.pattern));
      probs.push_back(std::move(tr.probs));
    }
    trace_sparse_attention(t, traced_name, heads, probs, true, fp.options().trace.masks);
  }
  return be.upload(out);
}

void reversible_forward(Backend& be, const Sublayer& attn, const Sublayer& ff, DTensor& x1,
                        DTensor& x2) {
  x1 = be.add(x1, attn(x2));  // Y1 = X1 + Attn(X2)
  x2 = be.add(x2, ff(x1));    // Y2 = X2 + FF(Y1)
}

void reversible_inverse(Backend& be, const Sublayer& attn, const Sublayer& ff, DTensor& y1,
                        DTensor& y2) {
  y2 = be.add(y2, be.scale(ff(y1), -1.0f));    // X2 = Y2 - FF(Y1)
  y1 = be.add(y1, be.scale(attn(y2), -1.0f));  // X1 = Y1 - Attn(X2)
}

DTensor chunked_rows(Backend& be, const DTensor& x, int64_t chunks, const Sublayer& f) {
  const int64_t L = x.shape[0];
  if (chunks <= 1 || L <= 1) return f(x);
  const Tensor host = be.download(x);
  const int64_t d = host.shape[1], step = (L + chunks - 1) / chunks;
  Tensor out;
  for (int64_t a = 0; a < L; a += step) {
    const int64_t b = std::min(L, a + step);
    Tensor part({b - a, d});
    std::copy(host.data.begin() + a * d, host.data.begin() + b * d, part.data.begin());
    const Tensor y = be.download(f(be.upload(part)));
    if (out.shape.empty()) out = Tensor({L, y.shape[1]});
    std::copy(y.data.begin(), y.data.end(), out.data.begin() + a * y.shape[1]);
  }
  return be.upload(out);
}

namespace {

// The reversible halves' executor on the Backend (reversible_halves.h): the feed-forward half
// on row chunks.
class ReversibleBackendExecutor : public BackendExecutor {
 public:
  explicit ReversibleBackendExecutor(ForwardPass& fp) : BackendExecutor(fp) {}
  DTensor in_row_chunks(const DTensor& x, int64_t chunks, const Sublayer& f) {
    return chunked_rows(be_, x, chunks, f);
  }
};

}  // namespace

DTensor reversible_stack(ForwardPass& fp, DTensor x, const std::string& stack, int64_t layers,
                         const AttentionMask& mask, const std::string& attn_name) {
  Backend& be = fp.backend();
  const ModelConfig& c = fp.config();
  ReversibleBackendExecutor e(fp);
  x = e.stack_input(stack, std::move(x));
  DTensor x1 = x, x2 = x;  // entry: duplicate
  for (int64_t i = 0; i < layers; ++i) {
    const std::string p = stack + ".layer" + std::to_string(i);
    const AttentionCall call{p + "." + attn_name, stack, attn_name, i, mask.causal, &mask.key_valid};
    const Sublayer attn = [&](const DTensor& h) { return reversible_attention_half(e, c, h, call); };
    const Sublayer ff = [&](const DTensor& h) { return reversible_ffn_half(e, c, h, p); };
    reversible_forward(be, attn, ff, x1, x2);
    if (fp.options().trace.hidden)
      fp.trace().add(p + ".hidden", "mean of the two reversible streams after the layer [L, d]",
                     be.download(be.scale(be.add(x1, x2), 0.5f)));
    fp.step(stack + " layer " + std::to_string(i));
  }
  x = be.scale(be.add(x1, x2), 0.5f);  // exit: mean of the streams
  const std::string norm = stack + ".final_norm";
  return fp.hooked_norm(norm, x, fp.norm(x, norm));
}

}  // namespace atlas
