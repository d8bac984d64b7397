#pragma once
// The differentiable forward of the vanilla engine: the same sequence of ops as ForwardPass
// (forward_pass.cpp) and Model::forward (model.cpp), recorded on a Tape. The norms, the
// feed-forward network and the residual sub-layers are the engine's own, run on the tape
// (core/model/transformer_block.h); the rest mirrors the engine op for op. Templates only,
// included by train_model_float.cpp and train_model_double.cpp: the two instantiations were
// one translation unit of ~140 s, the longest step of the build; split, they compile in
// parallel.
#include "core/formats/packed_weights.h"
#include "core/train/train_model.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "core/model/attention_sublayer.h"
#include "core/model/array_name_parts.h"
#include "core/model/embeddings.h"
#include "core/model/positional.h"
#include "core/model/qk_positions.h"
#include "core/model/stack_kind_module.h"
#include "core/model/stack_route.h"
#include "core/model/transformer_block.h"
#include "core/variants/gtrxl/train_gates.h"
#include "core/variants/reformer/lsh_attention.h"
#include "core/variants/reformer/reversible_halves.h"
#include "core/variants/transformer_xl/train_xl.h"
#include "core/variants/transformer_xl/xl_stack.h"
#include "core/variants/universal/train_act.h"
#include "core/variants/universal/universal_stack.h"

namespace atlas::train {

template <class S>
ParamsT<S> to_train_params(const ParamStore& store) {
  ParamsT<S> out;
  for (const auto& [name, held] : store) {
    // Training updates every value: a weight held in its file's encoding is converted here.
    const Tensor converted = held.packed ? to_float(held) : Tensor{};
    const Tensor& t = held.packed ? converted : held;
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
    // StackExecutor (core/model/standard_stacks.h): attention_sublayer over this executor.
    int attention(int xq, int xkv, const AttentionCall& call) {
      return attention_sublayer(*this, b_.c_, xq, xkv, call);
    }
    // AttentionExecutor (core/model/attention_sublayer.h): the tape's kernels, with attention
    // dropout (drawn as the sub-layer begins) and DropHead on the heads' outputs.
    struct AttentionRun {
      std::string prefix;
      AttentionSpec<S> spec;       // heads, scale, masks, attention-dropout multipliers
      std::vector<S> heads_kept;   // DropHead multipliers [H], empty when off
      QkPositions* positions = nullptr;
    };
    AttentionRun begin_attention(const AttentionCall& call, int xq, int xkv,
                                 const AttentionMechanismModule*);
    int qk_positions(const AttentionRun& run, int x, int heads) {
      return run.positions ? run.positions->apply(t_, x, heads) : x;
    }
    static void splice_prefix(const AttentionRun&, int&, int&) {}  // no cached prefix here
    static void inputs_ready(const AttentionRun&, int, int, int) {}
    int softmax_attention(AttentionRun& run, int q, int k, int v) {
      return t_.attention(q, k, v, std::move(run.spec));
    }
    // A mechanism's kernel (core/model/attention_kernel.h) on this tape.
    int mechanism_attention(AttentionRun& run, const AttentionMechanismModule& m, int xq, int q,
                            int k, int v) {
      const std::function<int(const std::string&)> weight = [this](const std::string& name) {
        return b_.w(name);
      };
      return run_tape_kernel<S>(*m.kernel, {t_, b_.c_, weight, b_.record, run.prefix, run.spec,
                                            xq, q, k, v});
    }
    int finish_attention(const AttentionRun& run, int heads) {  // DropHead, then W_o
      return attention_output(b_.drop_heads(heads, run.heads_kept), run.prefix);
    }
    // The heads' outputs o [Lq, H*dv] (recorded in ForwardResult::attention_nodes) through W^O.
    int attention_output(int o, const std::string& prefix) {
      b_.record.attention_nodes.push_back(o);
      const int out = t_.linear(o, b_.w(prefix + ".wo"), b_.opt(prefix + ".bo"));
      b_.record.attention_prefixes.push_back(prefix);
      b_.record.attention_output_nodes.push_back(out);
      return out;
    }
    bool skip_layer() { return b_.skip_layer(); }
    int layer_output(const std::string& layer, int input, int output) {
      b_.record.layer_nodes.push_back({layer, input, output});
      return output;
    }
    void layer_done(const std::string&, int) {}
    int ffn_output(const std::string&, int out) { return out; }  // hooks are the engine's
    int stack_input(const std::string&, int x) { return x; }
    int residual_sum(const std::string&, int x) { return x; }
    int norm_output(const std::string&, int, int output) { return output; }
    // XlExecutor (core/variants/transformer_xl/xl_stack.h)
    int64_t rows(int x) const { return t_.value(x).rows(); }
    int concat_rows(int a, int b) { return train::stack_rows(t_, a, b); }
    int slice_rows(int x, int64_t first, int64_t count) { return train::slice_rows(t_, x, first, count); }
    int detach(int x) { return t_.constant(t_.value(x)); }  // the reference's stop-gradient
    static int no_bias() { return -1; }
    int xl_attention(int q, int k, int v, int rk, int u, int vb, const XlSite&) {
      std::vector<S> keep = b_.attention_keep(rows(q), rows(k));
      const std::vector<S> heads_kept = b_.head_keep();
      return b_.drop_heads(xl_relative_attention(t_, b_.c_, q, k, v, rk, u, vb, std::move(keep)), heads_kept);
    }
    int gate(int stream, int out, const XlSite& site, GatedSublayer s) {  // train_gates.h
      const std::string prefix = gate_tensor_prefix(site.layer, s);
      return train::model_gate<S>(t_, b_.c_, stream, out,
                                  [&](const char* name) { return b_.w(prefix + name); });
    }
    void segment_layer_done(const XlSite&, int) {}
    // UniversalExecutor (core/variants/universal/universal_stack.h); ACT as train_act.h.
    struct ActRun {
      std::vector<S> cum;         // [L] sum of h over the steps before halting
      std::vector<uint8_t> halted;  // [L]
      std::vector<int> h_nodes;   // h^n [L, 1] of every step so far
      int y = -1;                 // [L, d] the ACT output so far
      int state = -1;             // [L, d] the next step's input
    };
    void trace_position_signal(const Tensor&) {}
    ActRun act_begin(int state) {
      const Eigen::Index L = t_.value(state).rows();
      b_.record.act_steps.assign(size_t(L), 0);
      b_.record.act_halt_nodes.assign(size_t(L), -1);
      return {std::vector<S>(size_t(L), S(0)), std::vector<uint8_t>(size_t(L), 0), {},
              t_.constant(M::Zero(L, t_.value(state).cols())), state};
    }
    static int act_state(const ActRun& act) { return act.state; }
    bool act_step(ActRun& act, int logit, int step_out, bool last);
    static int act_output(const ActRun& act) { return act.y; }
    void universal_step_done(const std::string&, int64_t, int) {}
    // ReversibleExecutor (core/variants/reformer/reversible_halves.h): the rows whole.
    static int in_row_chunks(int x, int64_t, const std::function<int(const int&)>& f) { return f(x); }

   private:
    Builder& b_;
    Tape<S>& t_;
  };

  int norm(int x, const std::string& prefix) {
    TapeExecutor e(*this);
    return apply_norm(e, c_, x, prefix);
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
    const int x = dropout(add_positions(e, c_, embed_tokens(e, c_, ids), L, 0, {}, [](auto&&) {}), reg_.dropout);
    return edits_ && edits_->embeddings ? edits_->embeddings(t_, x) : x;
  }

  // Transformer-XL, the inference engine's stack (core/variants/transformer_xl/xl_stack.h): its
  // memory a constant on the tape (the reference's stop-gradient), dropout after the
  // embeddings and each sub-layer, attention dropout and DropHead in its attention.
  int xl(const std::vector<int32_t>& ids) {
    TapeExecutor e(*this);
    return xl_stack(e, c_, ids);
  }

  // Reformer's reversible layers (core/variants/reformer/lsh_attention.cpp reversible_stack): the input enters
  // both streams, Y1 = X1 + F(X2), Y2 = X2 + G(Y1) with the halves F = drop(Attn(N(.))) and
  // G = drop(FF(N(.))) of core/variants/reformer/reversible_halves.h, and leaves as N_final(mean). Each layer is one tape op on [X1 | X2]
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
    TapeExecutor e(sub);
    const int in = scratch.constant(x);
    // The tape reads the call's parameters, causal mask and padding (no trace site here).
    const AttentionCall call{layer.attn_prefix, "", "", 0, layer.causal, &layer.valid};
    const int out = attention_half ? reversible_attention_half(e, *layer.config, in, call)
                                   : reversible_ffn_half(e, *layer.config, in, layer.prefix);
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
    if (has_reversible_layers(c_)) return reversible(x, "encoder", c_.n_layers, "attn", false, valid);
    TapeExecutor e(*this);
    return encoder_stack(e, c_, x, valid);
  }
  int decoder(int x, int memory, const std::vector<uint8_t>& self_valid,
              const std::vector<uint8_t>& memory_valid) {
    if (has_reversible_layers(c_) && memory < 0)
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

  // The Universal Transformer, the inference engine's steps
  // (core/variants/universal/universal_stack.h), with dropout after the embeddings and each
  // sub-layer; ACT decided on the values, its weights differentiable (train_act.h).
  int universal(const std::vector<int32_t>& ids, const std::vector<uint8_t>& valid) {
    TapeExecutor e(*this);
    return universal_stack(e, c_, ids, valid);
  }

  // What the forward records besides its logits (the attention outputs, the modules' nodes).
  ForwardResult<S> record;
  const ForwardEdits<S>* edits_ = nullptr;  // null in training

 private:
  // The config's positions on queries and keys, or null (core/model/qk_positions.h).
  std::unique_ptr<QkPositions> qk_positions_;
  Tape<S>& t_;
  const ModelConfig& c_;
  const ParamsT<S>& p_;
  const Regularization& reg_;
  Rng* rng_;
};

// An attention sub-layer begins: its spec (the scale rounded as the inference engine's, a
// float there; causal, padding, Mistral's window as a dense pattern), attention dropout's
// multipliers, then DropHead's.
template <class S>
typename Builder<S>::TapeExecutor::AttentionRun Builder<S>::TapeExecutor::begin_attention(
    const AttentionCall& call, int xq, int xkv, const AttentionMechanismModule*) {
  const ModelConfig& c = b_.c_;
  AttentionRun run;
  run.prefix = call.prefix;
  run.positions = !call.cross() ? b_.qk_positions_.get() : nullptr;
  AttentionSpec<S>& spec = run.spec;
  spec.heads = static_cast<int>(c.n_heads);
  spec.scale = static_cast<S>(1.0f / std::sqrt(static_cast<float>(c.d_head())));
  spec.causal = call.causal;
  if (call.key_valid) spec.key_valid = *call.key_valid;
  const int64_t lq = t_.value(xq).rows(), lk = t_.value(xkv).rows();
  spec.prob_keep = b_.attention_keep(lq, lk);
  if (call.causal && c.attention.sliding_window > 0) {  // Mistral's window, as a dense pattern
    spec.head_allowed.assign(size_t(c.n_heads * lq * lk), 0);
    for (int64_t h = 0; h < c.n_heads; ++h)
      for (int64_t i = 0; i < lq; ++i)
        for (int64_t j = std::max<int64_t>(0, i - c.attention.sliding_window + 1); j <= i && j < lk; ++j)
          spec.head_allowed[size_t((h * lq + i) * lk + j)] = 1;
  }
  run.heads_kept = b_.head_keep();
  return run;
}

// One ACT step (train_act.h): which positions run and which halt, decided on h's values; the
// weights w^n, the update of y and the next state recorded on the tape.
template <class S>
bool Builder<S>::TapeExecutor::act_step(ActRun& act, int logit, int step_out, bool last) {
  const UniversalConfig& u = act_settings(b_.c_);  // train_act.h
  const S threshold = S(1) - static_cast<S>(u.epsilon);
  const int h = t_.scaled_sigmoid(logit, S(1));
  act.h_nodes.push_back(h);
  const size_t L = act.cum.size();
  ActStepMask mask{std::vector<uint8_t>(L, 0), std::vector<uint8_t>(L, 0)};
  for (size_t i = 0; i < L; ++i) {
    if (act.halted[i]) continue;
    mask.running[i] = 1;
    ++b_.record.act_steps[i];
    const S p = t_.value(h)(Eigen::Index(i), 0);
    if (act.cum[i] + p >= threshold || last) {
      mask.halting[i] = 1;
      act.halted[i] = 1;
    } else {
      act.cum[i] += p;
    }
  }
  const std::vector<uint8_t> halting = mask.halting, running = mask.running;
  const int wn = act_weights(t_, act.h_nodes, std::move(mask));
  for (size_t i = 0; i < L; ++i)
    if (halting[i]) b_.record.act_halt_nodes[i] = wn;
  act.y = act_update(t_, act.y, step_out, wn, running, u.update == ActUpdate::Interpolate);
  act.state = select_rows(t_, step_out, act.state, running);
  return std::find(act.halted.begin(), act.halted.end(), 0) != act.halted.end();
}

}  // namespace

template <class S>
ForwardResult<S> build_forward(Tape<S>& tape, const ModelConfig& c, const ParamsT<S>& params,
                               const Example& ex, const Regularization& reg, Rng* rng) {
  return build_forward<S>(tape, c, params, ex, reg, rng, ForwardEdits<S>{});
}

template <class S>
ForwardResult<S> build_forward(Tape<S>& tape, const ModelConfig& c, const ParamsT<S>& params,
                               const Example& ex, const Regularization& reg, Rng* rng,
                               const ForwardEdits<S>& edits) {
  if (ex.source.empty()) throw AtlasError("training example has an empty source");
  Builder<S> b(tape, c, params, reg, rng);
  b.edits_ = &edits;
  int h = -1;
  const auto src_valid = b.validity(ex.source);
  switch (stack_route(c)) {  // core/model/stack_route.h, as Model::forward
    case StackRoute::Xl: h = b.xl(ex.source); break;
    case StackRoute::Universal: h = b.universal(ex.source, src_valid); break;
    case StackRoute::Encoder: h = b.encoder(b.embed(ex.source), src_valid); break;
    case StackRoute::Decoder: h = b.decoder(b.embed(ex.source), -1, src_valid, {}); break;
    case StackRoute::EncoderDecoder: {
      if (ex.target.empty()) throw AtlasError("encoder-decoder example has an empty target");
      const int memory = b.encoder(b.embed(ex.source), src_valid);
      h = b.decoder(b.embed(ex.target), memory, b.validity(ex.target), src_valid);
      break;
    }
    case StackRoute::HostModel:
      throw AtlasError("internal: a host model has no training forward (check_trainable)");
  }
  if (edits.logits_row >= 0) h = slice_rows(tape, h, edits.logits_row, 1);  // train_xl.h
  const int logits = b.logits(h);
  ForwardResult<S> r = std::move(b.record);
  r.logits = logits;
  return r;
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

#define ATLAS_TRAIN_INSTANTIATE(S)                                                              \
  template ParamsT<S> to_train_params<S>(const ParamStore&);                                    \
  template ParamStore to_param_store<S>(const ParamsT<S>&, const ModelConfig&);                 \
  template ForwardResult<S> build_forward<S>(Tape<S>&, const ModelConfig&, const ParamsT<S>&,   \
                                             const Example&, const Regularization&, Rng*);      \
  template ForwardResult<S> build_forward<S>(Tape<S>&, const ModelConfig&, const ParamsT<S>&,   \
                                             const Example&, const Regularization&, Rng*,       \
                                             const ForwardEdits<S>&);                           \
  template S smoothed_cross_entropy<S>(const MatT<S>&, const std::vector<int32_t>&, double,     \
                                       MatT<S>*, int64_t*, int64_t*);
}  // namespace atlas::train
