#pragma once
// The differentiable forward of the vanilla engine: the same sequence of ops as ForwardPass
// (forward_pass.cpp) and Model::forward (model.cpp), recorded on a Tape. The norms, the
// feed-forward network and the residual sub-layers are the engine's own, run on the tape
// (core/model/transformer_block.h); the rest mirrors the engine op for op. Templates only,
// included by train_model_float.cpp and train_model_double.cpp: the two instantiations were
// one translation unit of ~140 s, the longest step of the build; split, they compile in
// parallel.
#include "core/train/train_model.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "core/model/attention_inputs.h"
#include "core/model/attention_mechanism.h"
#include "core/model/embeddings.h"
#include "core/model/positional.h"
#include "core/model/qk_positions.h"
#include "core/model/transformer_block.h"
#include "core/variants/adaptive_span/train_span.h"
#include "core/variants/gtrxl/train_gates.h"
#include "core/variants/performer/train_performer.h"
#include "core/variants/reformer/lsh_attention.h"
#include "core/variants/score_functions/train_score.h"
#include "core/variants/shaw/train_shaw.h"
#include "core/variants/sparse/sparse_attention.h"
#include "core/variants/transformer_xl/train_xl.h"
#include "core/variants/universal/train_act.h"

namespace atlas::train {

template <class S>
ParamsT<S> to_train_params(const ParamStore& store) {
  ParamsT<S> out;
  for (const auto& [name, t] : store) {
    const int64_t rows = t.shape.size() >= 2 ? t.shape[0] : 1;
    const int64_t cols = rows ? t.numel() / rows : 0;
    MatT<S> m(rows, cols);
    for (int64_t i = 0; i < t.numel(); ++i) m.data()[i] = static_cast<S>(t.data[i]);
    out.emplace(name, std::move(m));
  }
  return out;
}

template <class S>
ParamStore to_param_store(const ParamsT<S>& params, const ModelConfig& config) {
  ParamStore store;
  for (const auto& spec : param_specs(config)) {
    const MatT<S>& m = params.at(spec.name);
    Tensor t(spec.shape);
    for (int64_t i = 0; i < t.numel(); ++i) t.data[i] = static_cast<float>(m.data()[i]);
    store.emplace(spec.name, std::move(t));
  }
  return store;
}

namespace {

template <class S>
class Builder {
 public:
  using M = MatT<S>;
  Builder(Tape<S>& t, const ModelConfig& c, const ParamsT<S>& p, const Regularization& reg,
          Rng* rng)
      : qk_positions_(make_qk_positions(c)), t_(t), c_(c), p_(p), reg_(reg), rng_(rng) {}

  int w(const std::string& name) { return t_.param(name, p_.at(name)); }
  int opt(const std::string& name) { return p_.count(name) ? w(name) : -1; }

  int dropout(int x, double p) {
    if (p <= 0.0 || !rng_) return x;
    const M& v = t_.value(x);
    M mask(v.rows(), v.cols());
    const S keep = S(1.0 / (1.0 - p));
    for (Eigen::Index i = 0; i < mask.size(); ++i)
      mask.data()[i] = rng_->uniform() < p ? S(0) : keep;
    return t_.multiply_constant(x, std::move(mask));
  }

  // The training Executor (core/model/executor.h): this builder's parameters on its tape, and
  // its residual dropout. The block pieces it runs are the inference engine's
  // (core/model/transformer_block.h).
  class TapeExecutor {
   public:
    using Value = int;
    explicit TapeExecutor(Builder& b) : b_(b), t_(b.t_) {}
    int weight(const std::string& name) { return b_.w(name); }
    int optional_weight(const std::string& name) { return b_.opt(name); }
    int constant(const Tensor& host) {
      M m(host.shape.at(0), host.numel() / host.shape.at(0));
      for (int64_t i = 0; i < host.numel(); ++i) m.data()[i] = static_cast<S>(host.data[size_t(i)]);
      return t_.constant(std::move(m));
    }
    int embedding(int table, const std::vector<int32_t>& ids, float scale) {
      return t_.gather_rows(table, ids, static_cast<S>(scale));
    }
    // ScaleNorm without a gain (g = -1): unit rows.
    int row_normalize(int x, float eps) { return t_.scale_norm(x, -1, S(eps)); }
    int linear(int x, int w, int bias) { return t_.linear(x, w, bias); }
    int add(int a, int b) { return t_.add(a, b); }
    int mul(int a, int b) { return t_.multiply(a, b); }
    int activation(int x, FfnActivation kind) { return t_.activation(x, kind); }
    int layer_norm(int x, int gamma, int beta, float eps) {
      return t_.layer_norm(x, gamma, beta, S(eps));
    }
    int rms_norm(int x, int gamma, float eps) { return t_.rms_norm(x, gamma, S(eps)); }
    int scale_norm(int x, int g, float eps) { return t_.scale_norm(x, g, S(eps)); }
    int repeat_heads(int x, int64_t groups, int64_t d_head) {
      return t_.repeat_heads(x, groups, d_head);
    }
    int residual_dropout(int x) { return b_.dropout(x, b_.reg_.dropout); }
    // StackExecutor (core/model/standard_stacks.h)
    int attention(int xq, int xkv, const AttentionCall& call) {
      static const std::vector<uint8_t> kAllValid;
      return b_.attention(xq, xkv, call.prefix, call.causal,
                          call.key_valid ? *call.key_valid : kAllValid);
    }
    bool skip_layer() { return b_.skip_layer(); }
    int layer_output(const std::string&, int, int output) { return output; }
    void layer_done(const std::string&, int) {}

   private:
    Builder& b_;
    Tape<S>& t_;
  };

  int norm(int x, const std::string& prefix) {
    TapeExecutor e(*this);
    return apply_norm(e, c_, x, prefix);
  }

  // The engine's CSR pattern of each head of this layer (core/variants/sparse/sparse_attention.h), as a dense
  // [H, L, L] mask: training lengths are short, and the dense tape op then needs no new backward.
  std::vector<uint8_t> sparse_allowed(const std::string& prefix, int64_t L, bool causal,
                                      const std::vector<uint8_t>& key_valid) const {
    AttentionMask mask;
    mask.causal = causal;
    mask.key_valid = key_valid;
    const std::vector<CsrPattern> heads =
        layer_patterns(*c_.sparse(), L, layer_index_of(prefix), c_.n_heads, mask);
    std::vector<uint8_t> allowed(size_t(c_.n_heads * L * L), 0);
    for (size_t h = 0; h < heads.size(); ++h)
      for (int64_t i = 0; i < L; ++i)
        for (int64_t n = heads[h].indptr[size_t(i)]; n < heads[h].indptr[size_t(i) + 1]; ++n)
          allowed[(h * size_t(L) + size_t(i)) * size_t(L) + size_t(heads[h].indices[size_t(n)])] = 1;
    return allowed;
  }

  // Reformer LSH attention (core/variants/reformer/lsh_attention.cpp) as one dense softmax: keys are the unit
  // shared-QK rows, a key counts once per round whose chunks let the query see it (log count
  // added to its score), a query's own key has the engine's constant -1e5. The buckets are
  // piecewise constant in q, so they carry no gradient and are read off the forward values.
  int lsh_attention(int q, int v, const std::string& prefix, AttentionSpec<S> spec) {
    const int H = static_cast<int>(c_.n_heads);
    const int64_t L = t_.value(q).rows(), dh = c_.d_head();
    const int k = head_unit_rows(t_, q, H, S(1e-6));
    const LshParams p = lsh_params(*c_.lsh(), L, layer_index_of(prefix), spec.causal,
                                   spec.key_valid.empty() ? nullptr : &spec.key_valid);
    spec.head_allowed.assign(size_t(H * L * L), 0);
    spec.score_bias.assign(size_t(H * L * L), S(0));
    for (int h = 0; h < H; ++h) {
      const Mat kh = t_.value(k).middleCols(h * dh, dh).template cast<float>();
      const std::vector<int32_t> counts = lsh_key_counts(kh, p, h);
      for (size_t n = 0; n < counts.size(); ++n) {
        spec.head_allowed[size_t(h) * counts.size() + n] = counts[n] > 0;
        if (counts[n] > 1) spec.score_bias[size_t(h) * counts.size() + n] = S(std::log(double(counts[n])));
      }
    }
    spec.causal = false;  // both folded into head_allowed (a padded query still sees itself)
    spec.key_valid.clear();
    spec.self_constant = true;
    spec.self_logit = S(-1e5);
    return t_.attention(q, k, v, std::move(spec));
  }

  // The engine's fixed random features of each head of this layer (core/variants/performer/performer.cpp).
  std::vector<Mat> performer_features(const std::string& prefix) const {
    std::vector<Mat> out;
    for (int64_t h = 0; h < c_.n_heads; ++h)
      out.push_back(
          performer_head_features(*c_.performer(), layer_index_of(prefix), h, c_.d_head()));
    return out;
  }

  int attention(int xq, int xkv, const std::string& prefix, bool causal,
                const std::vector<uint8_t>& key_valid) {
    // As ForwardPass::attention, which splices a cached prefix's keys in before the repeat.
    QkPositions* positions = !prefix.ends_with("cross_attn") ? qk_positions_.get() : nullptr;
    TapeExecutor e(*this);
    const AttentionInputs<int> in = attention_inputs(
        e, c_, xq, xkv, prefix,
        [&](int x, int heads) { return positions ? positions->apply(t_, x, heads) : x; },
        [](int&, int&) {});
    const int q = in.q, k = in.k, v = in.v;
    AttentionSpec<S> spec;
    spec.heads = static_cast<int>(c_.n_heads);
    // Same rounding as the inference engine: the scale is a float there.
    spec.scale = static_cast<S>(1.0f / std::sqrt(static_cast<float>(c_.d_head())));
    spec.causal = causal;
    spec.key_valid = key_valid;
    const int64_t lq = t_.value(xq).rows(), lk = t_.value(xkv).rows();
    spec.prob_keep = attention_keep(lq, lk);
    if (causal && c_.attention.sliding_window > 0) {  // Mistral's window, as a dense pattern
      spec.head_allowed.assign(size_t(c_.n_heads * lq * lk), 0);
      for (int64_t h = 0; h < c_.n_heads; ++h)
        for (int64_t i = 0; i < lq; ++i)
          for (int64_t j = std::max<int64_t>(0, i - c_.attention.sliding_window + 1); j <= i && j < lk; ++j)
            spec.head_allowed[size_t((h * lq + i) * lk + j)] = 1;
    }
    const std::vector<S> heads_kept = head_keep();
    auto out = [&](int o) {  // DropHead on the heads' outputs, then W_o
      o = drop_heads(o, heads_kept);
      attention_nodes.push_back(o);
      return t_.linear(o, w(prefix + ".wo"), opt(prefix + ".bo"));
    };
    switch (attention_mechanism(c_, xq == xkv)) {  // the inference forward's rule
      case AttentionMechanism::Lsh:  // Reformer: shared QK, hashed buckets (train_lsh in-line)
        return out(lsh_attention(q, v, prefix, spec));
      case AttentionMechanism::Performer:
        if (!spec.prob_keep.empty())
          throw AtlasError(
              "attention dropout needs the attention probabilities, which a Performer "
              "never forms; use dropout or DropHead instead");
        return out(performer_attention(t_, q, k, v, performer_features(prefix), spec));
      case AttentionMechanism::SparsePattern:  // a dense mask of the pattern, then softmax
        spec.head_allowed = sparse_allowed(prefix, lq, causal, key_valid);
        break;
      case AttentionMechanism::Relative:
        if (c_.adaptive_span()) {  // core/variants/adaptive_span/train_span.h
          const AdaptiveSpanConfig& sc = *c_.adaptive_span();
          const int z =
              sc.dynamic
                  ? t_.scaled_sigmoid(t_.linear(xq, w(prefix + ".span_v"), w(prefix + ".span_b")),
                                      S(sc.max_span))
                  : w(prefix + ".span_z");  // [Lq, H] or [1, H]
          span_z_nodes.push_back(z);
          return out(span_attention(t_, q, k, v, z, spec,
                                    {sc.ramp, sc.max_span, sc.mode, sc.distance_offset()}));
        }
        // Shaw alone (check_trainable refuses Shaw with a span): core/variants/shaw/train_shaw.h
        return out(shaw_attention(t_, q, k, v, w(prefix + ".rel_k"), w(prefix + ".rel_v"), spec,
                                  c_.shaw()->max_distance));
      case AttentionMechanism::Softmax:
      case AttentionMechanism::ScoreFunction:
        break;
    }
    return out(score_function_attention(q, k, v, prefix, std::move(spec)));
  }

  // Attention-dropout multipliers [H*Lq*Lk] (0 or 1/(1-p)), empty when off.
  std::vector<S> attention_keep(int64_t lq, int64_t lk) {
    std::vector<S> keep;
    if (reg_.attention_dropout <= 0 || !rng_) return keep;
    keep.resize(static_cast<size_t>(c_.n_heads * lq * lk));
    const S kept = S(1.0 / (1.0 - reg_.attention_dropout));
    for (S& m : keep) m = rng_->uniform() < reg_.attention_dropout ? S(0) : kept;
    return keep;
  }

  // DropHead (Zhou et al. 2020): whole heads dropped, the rest rescaled by H / kept; empty
  // when off.
  std::vector<S> head_keep() {
    std::vector<S> keep;
    if (reg_.drop_head <= 0 || !rng_) return keep;
    keep.assign(static_cast<size_t>(c_.n_heads), S(1));
    int kept = 0;
    for (S& m : keep) {
      m = rng_->uniform() < reg_.drop_head ? S(0) : S(1);
      kept += m != S(0);
    }
    for (S& m : keep) m *= kept ? S(c_.n_heads) / S(kept) : S(0);
    return keep;
  }

  // The heads' outputs [L, H*dv] times their DropHead multipliers; the same op for every
  // kind of head, so the variant attention ops need not know about it.
  int drop_heads(int o, const std::vector<S>& keep) {
    if (keep.empty()) return o;
    const M& v = t_.value(o);
    const Eigen::Index dv = v.cols() / Eigen::Index(keep.size());
    M mask(v.rows(), v.cols());
    for (size_t h = 0; h < keep.size(); ++h) mask.middleCols(Eigen::Index(h) * dv, dv).setConstant(keep[h]);
    return t_.multiply_constant(o, std::move(mask));
  }

  // Seed 004's score functions (core/variants/score_functions/train_score.h); scaled dot is the tape's own op.
  int score_function_attention(int q, int k, int v, const std::string& prefix, AttentionSpec<S> spec) {
    const int H = static_cast<int>(c_.n_heads);
    switch (c_.score_function().function) {
      case ScoreFunction::ScaledDot: break;
      case ScoreFunction::Dot: spec.scale = S(1); break;
      case ScoreFunction::General:
        q = head_matmul(t_, q, w(prefix + ".score.w"), H);
        spec.scale = S(1);
        break;
      case ScoreFunction::Cosine:
        q = head_unit_rows(t_, q, H);
        k = head_unit_rows(t_, k, H);
        spec.scale = S(c_.score_function().strength);
        break;
      case ScoreFunction::Location:
        k = head_key_rows(t_, w(prefix + ".score.w"), H, t_.value(k).rows(), c_.d_head());
        spec.scale = S(1);
        break;
      case ScoreFunction::Additive:
        return additive_attention(t_, q, k, v, w(prefix + ".score.w1"), w(prefix + ".score.w2"),
                                  w(prefix + ".score.v"), spec);
    }
    return t_.attention(q, k, v, std::move(spec));
  }

  int ffn(int x, const std::string& prefix) {
    TapeExecutor e(*this);
    return feed_forward(e, c_, x, prefix);
  }

  // x + drop(f(norm(x))) for pre-norm, norm(x + drop(f(x))) for post-norm (seed 002).
  template <class F>
  int sublayer(int x, const std::string& norm_prefix, F&& f) {
    TapeExecutor e(*this);
    return residual_sublayer(e, c_, x, norm_prefix, std::forward<F>(f));
  }

  bool skip_layer() { return reg_.layer_drop > 0 && rng_ && rng_->uniform() < reg_.layer_drop; }

  int table(const std::string& name) {
    const int id = w(name);
    return c_.fixnorm ? t_.scale_norm(id, -1, S(1e-5f)) : id;  // FixNorm: unit rows
  }

  // The inference engine's embeddings (core/model/embeddings.h), then dropout. Every token is
  // of type 0 (the training tasks have one segment).
  int embed(const std::vector<int32_t>& ids) {
    TapeExecutor e(*this);
    const int64_t L = static_cast<int64_t>(ids.size());
    const int x = add_positions(e, c_, embed_tokens(e, c_, ids), L, 0, {}, [](auto&&) {});
    return dropout(x, reg_.dropout);
  }

  // Transformer-XL (core/variants/transformer_xl/transformer_xl.cpp): the input in segments of segment_length; each
  // layer attends to its memory (the previous segments' inputs to that layer, last mem_len
  // rows, detached: a constant on the tape, the reference's stop-gradient) and the segment,
  // with relative positions only (no absolute encoding is added to the embeddings).
  int xl(const std::vector<int32_t>& ids) {
    const int64_t L = static_cast<int64_t>(ids.size()), seg_len = c_.xl()->segment_length, d = c_.d_model;
    const bool pre = c_.norm_position == NormPosition::Pre;
    const S emb_scale = c_.scale_embedding ? static_cast<S>(std::sqrt(static_cast<float>(d))) : S(1);
    std::vector<M> mem(size_t(c_.n_layers), M(0, d));
    int result = -1;
    for (int64_t start = 0; start < L; start += seg_len) {
      const int64_t lq = std::min(seg_len, L - start);
      std::vector<int32_t> seg(ids.begin() + start, ids.begin() + start + lq);
      int x = dropout(t_.gather_rows(table("embed.tokens"), std::move(seg), emb_scale), reg_.dropout);
      for (int64_t l = 0; l < c_.n_layers; ++l) {
        const std::string p = "decoder.layer" + std::to_string(l);
        const int cat = stack_rows(t_, t_.constant(mem[size_t(l)]), x);  // [m + Lq, d]
        const Eigen::Index rows = t_.value(cat).rows();
        mem[size_t(l)] = t_.value(cat).bottomRows(std::min<Eigen::Index>(c_.xl()->mem_len, rows));
        // GTrXL replaces the residual x + y of both sub-layers by a gate (core/variants/gtrxl/train_gates.h).
        auto residual = [&](int stream, int out, const std::string& gate_prefix) {
          if (!c_.gating()) return t_.add(stream, out);
          return gate<S>(t_, *c_.gating(), stream, out, [&](const char* n) { return w(gate_prefix + n); });
        };
        int y;
        if (pre) {
          const int ncat = norm(cat, p + ".self_attn_norm");
          y = residual(x, dropout(xl_attention(slice_rows(t_, ncat, rows - lq, lq), ncat, p), reg_.dropout),
                       p + ".self_attn_gate");
        } else {
          y = norm(residual(x, dropout(xl_attention(x, cat, p), reg_.dropout), p + ".self_attn_gate"),
                   p + ".self_attn_norm");
        }
        if (c_.gating()) {
          const int f = dropout(ffn(pre ? norm(y, p + ".ffn_norm") : y, p + ".ffn"), reg_.dropout);
          x = residual(y, f, p + ".ffn_gate");
          if (!pre) x = norm(x, p + ".ffn_norm");
        } else {
          x = sublayer(y, p + ".ffn_norm", [&](int h) { return ffn(h, p + ".ffn"); });
        }
      }
      result = result < 0 ? x : stack_rows(t_, result, x);
    }
    return pre ? norm(result, "decoder.final_norm") : result;
  }

  int xl_attention(int xq, int xkv, const std::string& layer) {
    const std::string p = layer + ".self_attn";
    const int q = t_.linear(xq, w(p + ".wq"), opt(p + ".bq"));
    const int k = t_.linear(xkv, w(p + ".wk"), opt(p + ".bk"));
    const int v = t_.linear(xkv, w(p + ".wv"), opt(p + ".bv"));
    const int64_t lk = t_.value(xkv).rows();
    const int64_t max_dist = xl_max_distance(lk, c_.xl()->clamp_len);
    const Tensor r = sinusoid_table(max_dist + 1, c_.d_model, SinusoidLayout::Concatenated);
    M rm(r.shape[0], r.shape[1]);
    for (int64_t i = 0; i < r.numel(); ++i) rm.data()[i] = static_cast<S>(r.data[size_t(i)]);
    const int rk = t_.linear(t_.constant(std::move(rm)), w(p + ".wr"), -1);  // R W_kR^T
    std::vector<S> keep = attention_keep(t_.value(xq).rows(), lk);
    const std::vector<S> heads_kept = head_keep();
    const int o = drop_heads(xl_relative_attention(t_, q, k, v, rk, w("xl.u"), w("xl.v"),
                                                   static_cast<int>(c_.n_heads), *c_.xl(), std::move(keep)),
                             heads_kept);
    attention_nodes.push_back(o);
    return t_.linear(o, w(p + ".wo"), opt(p + ".bo"));
  }

  // Reformer's reversible layers (core/variants/reformer/lsh_attention.cpp reversible_stack): the input enters
  // both streams, Y1 = X1 + F(X2), Y2 = X2 + G(Y1) with F = drop(Attn(N(.))) and
  // G = drop(FF(N(.))), and leaves as N_final(mean). Each layer is one tape op on [X1 | X2]
  // that keeps no activation: its input's value is released as soon as the layer has read it,
  // and its backward rebuilds that input from its output (X2 = Y2 - G(Y1), X1 = Y1 - F(X2)),
  // re-running F and G on a scratch tape for the gradients: memory per layer is one stream.
  int reversible(int x, const std::string& stack, int64_t layers, const std::string& attn_name,
                 bool causal, const std::vector<uint8_t>& valid) {
    const Eigen::Index d = t_.value(x).cols();
    M both(t_.value(x).rows(), 2 * d);
    both << t_.value(x), t_.value(x);
    int streams = t_.record(std::move(both), [=](Tape<S>& t, const M& dy) {
      t.grad(x) += dy.leftCols(d) + dy.rightCols(d);
    });
    const auto config = std::make_shared<const ModelConfig>(c_);
    for (int64_t i = 0; i < layers; ++i) {
      if (skip_layer()) continue;
      const std::string p = stack + ".layer" + std::to_string(i);
      const int next = reversible_layer(streams, {config, &p_, reg_, p, p + "." + attn_name, causal, valid});
      t_.release_value(streams);
      streams = next;
    }
    const M& y = t_.value(streams);
    M mean = (y.leftCols(d) + y.rightCols(d)) * S(0.5);
    const int merged = t_.record(std::move(mean), [=](Tape<S>& t, const M& dy) {
      M& g = t.grad(streams);
      g.leftCols(d) += dy * S(0.5);
      g.rightCols(d) += dy * S(0.5);
    });
    return norm(merged, stack + ".final_norm");
  }

  // What a reversible layer's backward needs to re-run its halves (the builder is gone then).
  struct ReversibleLayer {
    std::shared_ptr<const ModelConfig> config;
    const ParamsT<S>* params;
    Regularization reg;
    std::string prefix, attn_prefix;
    bool causal;
    std::vector<uint8_t> valid;
  };

  // F (attention half) or G (feed-forward half) of a reversible layer at x, on a scratch tape,
  // dropout drawn from `rng` (may be null). With dy: dx gets d<dy, f(x)>/dx and `grads` the
  // parameters' part; `names`, when given, gets the parameters the half reads.
  static M run_half(const ReversibleLayer& layer, bool attention_half, const M& x, Rng* rng,
                    const M* dy, M* dx, ParamsT<S>* grads, std::vector<std::string>* names) {
    Tape<S> scratch;
    Builder sub(scratch, *layer.config, *layer.params, layer.reg, rng);
    const int in = scratch.constant(x);
    int out;
    if (attention_half) {
      const int n = sub.norm(in, layer.attn_prefix + "_norm");
      out = sub.dropout(sub.attention(n, n, layer.attn_prefix, layer.causal, layer.valid), layer.reg.dropout);
    } else {
      out = sub.dropout(sub.ffn(sub.norm(in, layer.prefix + ".ffn_norm"), layer.prefix + ".ffn"),
                        layer.reg.dropout);
    }
    if (names) *names = scratch.param_names();
    if (dy) {
      scratch.backward(out, *dy, *grads);
      *dx = scratch.grad(in);
    }
    return scratch.value(out);
  }

  int reversible_layer(int in, ReversibleLayer layer) {
    const Eigen::Index d = t_.value(in).cols() / 2;
    const M x1 = t_.value(in).leftCols(d), x2 = t_.value(in).rightCols(d);
    // The generator's state before each half: the backward replays the same dropout draws.
    const std::optional<Rng> f_draws = rng_ ? std::optional<Rng>(*rng_) : std::nullopt;
    std::vector<std::string> f_names, g_names;
    const M y1 = x1 + run_half(layer, true, x2, rng_, nullptr, nullptr, nullptr, &f_names);
    const std::optional<Rng> g_draws = rng_ ? std::optional<Rng>(*rng_) : std::nullopt;
    const M y2 = x2 + run_half(layer, false, y1, rng_, nullptr, nullptr, nullptr, &g_names);
    std::map<std::string, int> ids;  // the main tape's nodes of the parameters both halves read
    for (const auto* names : {&f_names, &g_names})
      for (const std::string& name : *names) ids[name] = w(name);
    M y(y1.rows(), 2 * d);
    y << y1, y2;
    return t_.record(std::move(y), [=, layer = std::move(layer)](Tape<S>& t, const M& dy) {
      const M& Y = t.value(t.current());
      const M y1 = Y.leftCols(d), y2 = Y.rightCols(d);
      const M dy2 = dy.rightCols(d);
      ParamsT<S> grads;
      M dy1 = dy.leftCols(d), dg, df;
      std::optional<Rng> g_rng = g_draws, f_rng = f_draws;
      const M x2 = y2 - run_half(layer, false, y1, g_rng ? &*g_rng : nullptr, &dy2, &dg, &grads, nullptr);
      dy1 += dg;  // Y2 reads Y1 through G
      const M x1 = y1 - run_half(layer, true, x2, f_rng ? &*f_rng : nullptr, &dy1, &df, &grads, nullptr);
      M x(x1.rows(), 2 * d);
      x << x1, x2;
      t.set_value(in, std::move(x));
      M& dx = t.grad(in);
      dx.leftCols(d) += dy1;
      dx.rightCols(d) += dy2 + df;
      for (const auto& [name, g] : grads) t.grad(ids.at(name)) += g;
    });
  }

  int encoder(int x, const std::vector<uint8_t>& valid) {
    if (c_.reversible()) return reversible(x, "encoder", c_.n_layers, "attn", false, valid);
    TapeExecutor e(*this);
    return encoder_stack(e, c_, x, valid);
  }
  int decoder(int x, int memory, const std::vector<uint8_t>& self_valid,
              const std::vector<uint8_t>& memory_valid) {
    if (c_.reversible() && memory < 0)
      return reversible(x, "decoder", c_.decoder_layers(), "self_attn", true, self_valid);
    TapeExecutor e(*this);
    return decoder_stack(e, c_, x, memory >= 0 ? &memory : nullptr, self_valid, memory_valid);
  }

  int logits(int h) {
    return t_.matmul_nt(h, c_.output == OutputHead::Tied ? table("embed.tokens")
                                                         : table("output.weight"));
  }

  std::vector<uint8_t> validity(const std::vector<int32_t>& ids) const {
    if (c_.pad_id < 0) return {};
    std::vector<uint8_t> v(ids.size());
    bool any = false;
    for (size_t i = 0; i < ids.size(); ++i) {
      v[i] = ids[i] != c_.pad_id;
      any |= !v[i];
    }
    return any ? v : std::vector<uint8_t>{};
  }

  // The Universal Transformer (core/variants/universal/universal.cpp, op for op): one shared block applied up to
  // M times to the state plus the position and time signal, with ACT halting per position or
  // a fixed number of steps. The token embedding carries no positions; the signal does.
  int universal(const std::vector<int32_t>& ids, const std::vector<uint8_t>& valid) {
    const UniversalConfig& u = std::get<UniversalConfig>(c_.stack);
    const bool dec = c_.architecture == Architecture::Decoder;
    const std::string stack = dec ? "decoder" : "encoder", pre = stack + ".universal",
                      attn = dec ? "self_attn" : "attn";
    const S scale = c_.scale_embedding ? static_cast<S>(std::sqrt(static_cast<float>(c_.d_model))) : S(1);
    int state = dropout(t_.gather_rows(table("embed.tokens"), ids, scale), reg_.dropout);
    const int64_t L = static_cast<int64_t>(ids.size()), d = c_.d_model;
    const Tensor pos = sinusoid_table(L, d, c_.sinusoid_layout);
    auto signal = [&](int64_t n) {
      const Tensor time = sinusoid_table(1, d, c_.sinusoid_layout, n);
      M m(L, d);
      for (int64_t i = 0; i < L; ++i)
        for (int64_t k = 0; k < d; ++k)
          m(i, k) = static_cast<S>(pos.data[size_t(i * d + k)] + time.data[size_t(k)]);
      return t_.constant(std::move(m));
    };
    auto block = [&](int s) {
      const int x = sublayer(s, pre + "." + attn + "_norm",
                             [&](int h) { return attention(h, h, pre + "." + attn, dec, valid); });
      return sublayer(x, pre + ".ffn_norm", [&](int h) { return ffn(h, pre + ".ffn"); });
    };
    auto finish = [&](int y) {
      return c_.norm_position == NormPosition::Pre ? norm(y, stack + ".final_norm") : y;
    };
    if (!u.act) {
      for (int64_t n = 1; n <= u.max_steps; ++n) state = block(t_.add(state, signal(n)));
      return finish(state);
    }
    const S threshold = S(1) - static_cast<S>(u.epsilon);
    std::vector<S> cum(size_t(L), S(0));
    std::vector<uint8_t> halted(size_t(L), 0);
    act_steps.assign(size_t(L), 0);
    act_halt_nodes.assign(size_t(L), -1);
    int y = t_.constant(M::Zero(L, d));
    std::vector<int> h_nodes;
    for (int64_t n = 1; n <= u.max_steps; ++n) {
      if (std::find(halted.begin(), halted.end(), 0) == halted.end()) break;
      const int sn = t_.add(state, signal(n));
      const int h = t_.scaled_sigmoid(t_.linear(sn, w(pre + ".halt.w"), w(pre + ".halt.b")), S(1));
      h_nodes.push_back(h);
      ActStepMask mask{std::vector<uint8_t>(size_t(L), 0), std::vector<uint8_t>(size_t(L), 0)};
      for (size_t i = 0; i < size_t(L); ++i) {
        if (halted[i]) continue;
        mask.running[i] = 1;
        ++act_steps[i];
        const S p = t_.value(h)(Eigen::Index(i), 0);
        if (cum[i] + p >= threshold || n == u.max_steps) {
          mask.halting[i] = 1;
          halted[i] = 1;
        } else {
          cum[i] += p;
        }
      }
      const std::vector<uint8_t> halting = mask.halting, running = mask.running;
      const int wn = act_weights(t_, h_nodes, std::move(mask));
      for (size_t i = 0; i < size_t(L); ++i)
        if (halting[i]) act_halt_nodes[i] = wn;
      const int tn = block(sn);
      y = act_update(t_, y, tn, wn, running, u.update == ActUpdate::Interpolate);
      state = select_rows(t_, tn, state, running);
    }
    return finish(y);
  }

  std::vector<int> attention_nodes;
  std::vector<int> span_z_nodes;
  std::vector<int64_t> act_steps;
  std::vector<int> act_halt_nodes;

 private:
  // The config's positions on queries and keys, or null (core/model/qk_positions.h).
  std::unique_ptr<QkPositions> qk_positions_;
  Tape<S>& t_;
  const ModelConfig& c_;
  const ParamsT<S>& p_;
  const Regularization& reg_;
  Rng* rng_;
};

}  // namespace

template <class S>
ForwardResult<S> build_forward(Tape<S>& tape, const ModelConfig& c, const ParamsT<S>& params,
                               const Example& ex, const Regularization& reg, Rng* rng) {
  if (ex.source.empty()) throw AtlasError("training example has an empty source");
  Builder<S> b(tape, c, params, reg, rng);
  ForwardResult<S> r;
  int h;
  const auto src_valid = b.validity(ex.source);
  if (c.xl()) {
    h = b.xl(ex.source);
  } else if (c.universal()) {
    h = b.universal(ex.source, src_valid);
  } else if (c.architecture == Architecture::Encoder) {
    h = b.encoder(b.embed(ex.source), src_valid);
  } else if (c.architecture == Architecture::Decoder) {
    h = b.decoder(b.embed(ex.source), -1, src_valid, {});
  } else {
    if (ex.target.empty()) throw AtlasError("encoder-decoder example has an empty target");
    const int memory = b.encoder(b.embed(ex.source), src_valid);
    h = b.decoder(b.embed(ex.target), memory, b.validity(ex.target), src_valid);
  }
  r.logits = b.logits(h);
  r.attention_nodes = std::move(b.attention_nodes);
  r.span_z_nodes = std::move(b.span_z_nodes);
  r.act_steps = std::move(b.act_steps);
  r.act_halt_nodes = std::move(b.act_halt_nodes);
  return r;
}

template <class S>
double ponder_cost(Tape<S>& tape, const ForwardResult<S>& r, double weight, double seed_weight) {
  const size_t L = r.act_steps.size();
  if (L == 0) return 0.0;
  double total = 0;
  for (size_t i = 0; i < L; ++i) {
    const int node = r.act_halt_nodes[i];
    total += double(r.act_steps[i]) + double(tape.value(node)(Eigen::Index(i), 0));
    if (seed_weight > 0 && weight > 0)
      tape.grad(node)(Eigen::Index(i), 0) += static_cast<S>(weight * seed_weight / double(L));
  }
  return weight * total / double(L);
}

template <class S>
S smoothed_cross_entropy(const MatT<S>& logits, const std::vector<int32_t>& labels,
                         double smoothing, MatT<S>* dlogits, int64_t* correct, int64_t* count) {
  const Eigen::Index V = logits.cols();
  if (static_cast<Eigen::Index>(labels.size()) != logits.rows())
    throw AtlasError("internal: " + std::to_string(labels.size()) + " labels for " +
                     std::to_string(logits.rows()) + " output rows");
  if (dlogits) *dlogits = MatT<S>::Zero(logits.rows(), V);
  const S eps = static_cast<S>(smoothing), uniform = eps / static_cast<S>(V);
  S total = 0;
  for (Eigen::Index r = 0; r < logits.rows(); ++r) {
    const int32_t y = labels[r];
    if (y < 0) continue;
    const S mx = logits.row(r).maxCoeff();
    const auto e = (logits.row(r).array() - mx).exp().eval();
    const S lse = mx + std::log(e.sum());
    // -sum_k q_k log p_k with q = (1 - eps) onehot(y) + eps / V
    const S nll = lse - logits(r, y);
    const S mean_nll = lse - logits.row(r).mean();
    total += (S(1) - eps) * nll + eps * mean_nll;
    if (dlogits) {
      dlogits->row(r) = (e / e.sum()).matrix();
      dlogits->row(r).array() -= uniform;
      (*dlogits)(r, y) -= S(1) - eps;
    }
    Eigen::Index arg;
    logits.row(r).maxCoeff(&arg);
    if (correct) *correct += arg == y;
    if (count) ++*count;
  }
  return total;
}

template <class S>
double span_penalty(Tape<S>& tape, const AdaptiveSpanConfig& span, const std::vector<int>& z_nodes,
                    double seed_weight) {
  const double coeff = span.loss_coeff, smax = double(span.max_span);
  double total = 0;
  for (int id : z_nodes) {
    const MatT<S>& z = tape.value(id);
    for (Eigen::Index i = 0; i < z.size(); ++i)
      total += std::clamp(double(z.data()[i]), 0.0, smax) / double(z.rows());
    if (seed_weight > 0)  // straight through the clamp, like the span mask (train_span.h)
      tape.grad(id).array() += static_cast<S>(coeff * seed_weight / double(z.rows()));
  }
  return coeff * total;
}

#define ATLAS_TRAIN_INSTANTIATE(S)                                                              \
  template ParamsT<S> to_train_params<S>(const ParamStore&);                                    \
  template ParamStore to_param_store<S>(const ParamsT<S>&, const ModelConfig&);                 \
  template ForwardResult<S> build_forward<S>(Tape<S>&, const ModelConfig&, const ParamsT<S>&,   \
                                             const Example&, const Regularization&, Rng*);      \
  template S smoothed_cross_entropy<S>(const MatT<S>&, const std::vector<int32_t>&, double,     \
                                       MatT<S>*, int64_t*, int64_t*);                           \
  template double span_penalty<S>(Tape<S>&, const AdaptiveSpanConfig&, const std::vector<int>&, \
                                  double);                                                      \
  template double ponder_cost<S>(Tape<S>&, const ForwardResult<S>&, double, double);
}  // namespace atlas::train
