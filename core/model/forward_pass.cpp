#include "core/model/forward_pass.h"

#include "core/model/stack_kind_module.h"

#include <algorithm>
#include <cmath>

#include "core/model/mechanism_module.h"
#include "core/model/attention_sublayer.h"
#include "core/model/embeddings.h"
#include "core/model/model_arrays.h"
#include "core/model/stack_kind_module.h"
#include "core/tensor/error.h"

namespace atlas {

Tensor mask_matrix(const AttentionMask& m, int64_t lq, int64_t lk) {
  Tensor t({lq, lk});
  for (int64_t i = 0; i < lq; ++i)
    for (int64_t j = 0; j < lk; ++j) t.data[i * lk + j] = m.is_allowed(i, j, lk) ? 1.0f : 0.0f;
  return t;
}

ForwardPass::ForwardPass(const ModelConfig& config, Backend& backend, const Weights& weights,
                         const RunOptions& options, Trace& trace, int64_t steps_total)
    : c_(config),
      be_(backend),
      w_(weights),
      opt_(options),
      trace_(trace),
      steps_total_(std::max<int64_t>(1, steps_total)),
      qk_positions_(make_qk_positions(config)) {}

const DTensor& ForwardPass::weight(const std::string& name) const {
  auto it = w_.find(name);
  if (it == w_.end()) throw AtlasError("internal: weight " + name + " not uploaded");
  return it->second;
}

DTensor ForwardPass::optional_weight(const std::string& name) const {
  auto it = w_.find(name);
  return it == w_.end() ? DTensor{} : it->second;
}

void ForwardPass::step(const std::string& stage) {
  if (opt_.cancel && opt_.cancel->load()) throw Cancelled();
  ++steps_done_;
  if (opt_.progress) opt_.progress(double(steps_done_) / double(steps_total_), stage);
}

void ForwardPass::continue_after(const PrefixCache::Keys* keys, int64_t past,
                                 PrefixCache::Keys* record) {
  past_keys_ = keys;
  past_ = past;
  record_ = record;
  if (record_) {
    record_->k.assign(static_cast<size_t>(c_.decoder_layers()), DTensor{});
    record_->v.assign(static_cast<size_t>(c_.decoder_layers()), DTensor{});
  }
}

DTensor ForwardPass::norm(const DTensor& x, const std::string& prefix) {
  BackendExecutor e(*this);
  return apply_norm(e, c_, x, prefix);
}

AttentionMap attention_site(std::string stack, std::string sublayer, int64_t layer, int64_t step) {
  AttentionMap m;
  m.stack = std::move(stack);
  m.sublayer = std::move(sublayer);
  m.layer = layer;
  m.step = step;
  return m;
}

DTensor BackendExecutor::attention(const DTensor& xq, const DTensor& xkv, const AttentionCall& call) {
  return attention_sublayer(*this, pass_.c_, xq, xkv, call);
}

BackendAttentionRun BackendExecutor::begin_attention(const AttentionCall& call, const DTensor& xq,
                                                     const DTensor& xkv,
                                                     const AttentionMechanismModule* mechanism) {
  ForwardPass& p = pass_;
  const ModelConfig& c = p.c_;
  BackendAttentionRun run;
  run.prefix = call.prefix;
  run.mechanism = mechanism;
  run.scale = 1.0f / std::sqrt(static_cast<float>(c.d_head()));  // seed 002: 1/sqrt(d_k)
  if (call.causal) {
    run.mask.causal = true;
    run.mask.causal_offset = p.past_;  // queries start after the cached prefix
    run.mask.window = c.attention.sliding_window;
  }
  if (call.key_valid) run.mask.key_valid = *call.key_valid;
  AttentionMap site = attention_site(call.stack, call.sublayer, call.layer, call.step);
  run.traced_name = attention_array_name(site);
  const bool sparse = is_sparse_mechanism(mechanism);  // sparse patterns, LSH, Performer
  run.positions = !call.cross() ? p.qk_positions_.get() : nullptr;
  // Decoder self-attention continuing a cached prefix (prefix_cache.h): keys and values of the
  // past tokens go before this call's, and the query rows are the positions after them.
  run.continues = (p.past_ > 0 || p.record_) && call.stack == "decoder" && call.sublayer == "self_attn";
  run.past = run.continues ? p.past_ : 0;
  run.layer = static_cast<size_t>(call.layer);
  if (run.past > 0) {
    site.queries = {TokenSide::Source, 0, run.past + xq.shape[0]};
    site.keys = site.queries;
  }
  // Full attention above the size budget (attention_on_demand.h): the queries and keys are
  // traced instead of the maps, which are computed from them on request.
  run.on_demand = p.maps_on_demand_ && p.opt_.trace.attention &&
                  !mechanism && run.mask.allowed.empty();
  if (p.opt_.trace.attention) {
    // Rows are the stack's tokens: the target's for an encoder-decoder's decoder; columns the
    // same tokens, or the source's for cross-attention.
    const bool target_rows = c.architecture == Architecture::EncoderDecoder && site.stack == "decoder";
    const TokenSide rows = target_rows ? TokenSide::Target : TokenSide::Source;
    if (site.queries.count == 0) site.queries = {rows, 0, xq.shape[0]};
    if (site.keys.count == 0) site.keys = {call.cross() ? TokenSide::Source : rows, 0, xkv.shape[0]};
    site.kind = call.cross()    ? AttentionMapKind::Cross
                : !sparse       ? AttentionMapKind::Self
                : mechanism->sparse_map_kind;  // Performer's implicit maps (mechanism_module.h)
    site.array = run.traced_name;
    if (c.kv_heads() != c.n_heads) site.kv_heads = c.kv_heads();
    if (run.on_demand) {
      site.on_demand = true;
      site.heads = c.n_heads;
      site.scale = run.scale;
      // Of the whole map: after a cached prefix its query rows start at 0 again (the trace is
      // spliced, prefix_cache.h), so the offset loses the prefix.
      site.causal = run.mask.causal;
      site.causal_offset = run.mask.causal_offset - run.past;
      // A window wider than every distance hides nothing (kept within the map's reach).
      site.window = std::min<int64_t>(run.mask.window, site.queries.count + site.keys.count + 1);
    }
    p.trace_.describe_attention(std::move(site));
  }
  return run;
}

// Queries and keys at this call's positions (after a cached prefix, the positions after it).
DTensor BackendExecutor::qk_positions(const BackendAttentionRun& run, const DTensor& x, int heads) {
  return run.positions ? run.positions->apply(be_, x, heads, run.past) : x;
}

// Self-attention after a cached prefix: the prefix's keys and values in front of this call's
// (the queries stay this call's rows); a run that records keys for the next keeps them.
void BackendExecutor::splice_prefix(const BackendAttentionRun& run, DTensor& k, DTensor& v) {
  if (!run.continues) return;
  ForwardPass& p = pass_;
  if (run.past > 0) {
    k = be_.concat_rows(be_.slice_rows(p.past_keys_->k.at(run.layer), 0, run.past), k);
    v = be_.concat_rows(be_.slice_rows(p.past_keys_->v.at(run.layer), 0, run.past), v);
  }
  if (p.record_) {
    p.record_->k.at(run.layer) = k;
    p.record_->v.at(run.layer) = v;
  }
}

void BackendExecutor::inputs_ready(const BackendAttentionRun& run, DTensor& q, DTensor& k, DTensor& v) {
  ForwardPass& p = pass_;
  if (p.opt_.hooks.qkv) {  // a host round trip, for analysis runs only (activation_hooks.h)
    Tensor hq = be_.download(q), hk = be_.download(k), hv = be_.download(v);
    p.opt_.hooks.qkv(run.prefix, hq, hk, hv);
    q = be_.upload(hq);
    k = be_.upload(hk);
    v = be_.upload(hv);
  }
  const TraceOptions& want = p.opt_.trace;
  const int64_t lq = q.shape[0], lk = k.shape[0], past = run.past;
  const std::string& name = run.traced_name;
  if (want.value_norms) p.trace_value_norms(name, v, run.prefix);
  // `atlas scores` recomputes every score function from these; on-demand maps are computed from
  // them. After a cached prefix only this call's key rows are traced (the rest are spliced in).
  if (want.qk || run.on_demand) {
    p.trace_later(companion_array_name(name, Companion::Queries), "projected queries, heads side by side [Lq, heads*d_head]", q);
    p.trace_later(companion_array_name(name, Companion::Keys), "projected keys, heads side by side [Lk, heads*d_head]",
                  past > 0 ? be_.slice_rows(k, past, k.shape[0] - past) : k);
  }
  if (is_sparse_mechanism(run.mechanism)) return;  // CSR patterns, never a dense L x L mask
  if (run.on_demand && !run.mask.key_valid.empty()) {
    Tensor valid({lk - past});  // after a cached prefix, this call's keys (spliced like k)
    for (int64_t j = past; j < lk; ++j) valid.data[size_t(j - past)] = run.mask.key_valid[size_t(j)] ? 1.0f : 0.0f;
    p.trace_.add(companion_array_name(name, Companion::KeyValid), "1 for a real key, 0 for padding [Lk]", std::move(valid), DType::I32);
  }
  if (want.masks && !run.on_demand)  // an on-demand map's mask is its rule (AttentionMap)
    p.trace_.add(companion_array_name(name, Companion::Mask), "allowed keys (1) per query [Lq, Lk]", mask_matrix(run.mask, lq, lk),
                 DType::I32);
}

DTensor BackendExecutor::softmax_attention(BackendAttentionRun& run, const DTensor& q,
                                           const DTensor& k, const DTensor& v) {
  ForwardPass& p = pass_;
  AttentionArgs args;
  args.heads = static_cast<int>(p.c_.n_heads);
  args.scale = run.scale;
  const bool traced = p.opt_.trace.attention && !run.on_demand;
  args.want_probs = traced || p.opt_.hooks.pattern;
  args.want_scores = p.opt_.trace.scores && !run.on_demand;
  args.mask = std::move(run.mask);
  AttentionResult r = be_.attention(q, k, v, args);
  if (p.opt_.hooks.pattern) edit_pattern(run, r, v);
  args.want_probs = traced;
  if (args.want_probs) p.trace_later(run.traced_name, "attention probabilities [heads, Lq, Lk]", r.probs);
  if (args.want_scores)
    p.trace_later(companion_array_name(run.traced_name, Companion::Scores),
                  "pre-softmax scores q.k/sqrt(d_head), masked = -inf [heads, Lq, Lk]", r.scores);
  return r.out;
}

// RunOptions::hooks.pattern sees the probabilities [H, Lq, Lk]; the heads whose probabilities it
// changed get their outputs recomputed as P_h V_h on the host (the others keep the kernel's bits,
// so a hook that changes nothing changes nothing).
void BackendExecutor::edit_pattern(const BackendAttentionRun& run, AttentionResult& r, const DTensor& v) {
  Tensor probs = be_.download(r.probs);
  const Tensor before = probs;
  pass_.opt_.hooks.pattern(run.prefix, probs);
  if (probs.shape != before.shape)
    throw AtlasError("internal: a pattern hook of " + run.prefix + " changed the shape of the probabilities");
  const int64_t H = probs.shape[0], lq = probs.shape[1], lk = probs.shape[2];
  Tensor out, values;  // [Lq, H * dv], [Lk, H * dv], downloaded when a head changed
  for (int64_t h = 0; h < H; ++h) {
    const size_t n = size_t(lq * lk), at = size_t(h) * n;
    if (std::equal(probs.data.begin() + at, probs.data.begin() + at + n, before.data.begin() + at)) continue;
    if (out.data.empty()) {
      out = be_.download(r.out);
      values = be_.download(v);
    }
    const int64_t dv = values.shape[1] / H;
    const ConstMatMap P(probs.data.data() + at, lq, lk);
    out.mat().middleCols(h * dv, dv) = P * values.mat().middleCols(h * dv, dv);
  }
  if (!out.data.empty()) r.out = be_.upload(out);
  r.probs = be_.upload(probs);
}

DTensor BackendExecutor::mechanism_attention(const BackendAttentionRun& run,
                                             const AttentionMechanismModule& m, const DTensor& xq,
                                             const DTensor& q, const DTensor& k, const DTensor& v) {
  return m.kernel->backend({pass_, run.prefix, run.traced_name, run.mask, xq, q, k, v});
}

void ForwardPass::trace_value_norms(const std::string& traced_name, const DTensor& v, const std::string& prefix) {
  const Tensor values = be_.download(v);  // [Lk, H * dh]
  const Tensor wo = be_.download(weight(prefix + ".wo"));  // [d, H * dh]
  const int64_t lk = values.shape[0], width = values.shape[1], H = c_.n_heads, dh = width / H;
  Tensor norms({H, lk});
  for (int64_t h = 0; h < H; ++h) {
    const Mat f = values.mat().middleCols(h * dh, dh) * wo.mat().middleCols(h * dh, dh).transpose();  // [Lk, d]
    for (int64_t j = 0; j < lk; ++j) norms.data[size_t(h * lk + j)] = f.row(j).norm();
  }
  trace_.add(companion_array_name(traced_name, Companion::ValueNorms), "|W^O_h v_j| per head and key, what key j adds through head h [heads, Lk]",
             std::move(norms));
}

DTensor ForwardPass::attention_output(const DTensor& o, const std::string& prefix) {
  DTensor heads = o;
  if (opt_.hooks.heads) {
    Tensor h = be_.download(o);
    opt_.hooks.heads(prefix, h);
    heads = be_.upload(h);
  }
  DTensor out = be_.linear(heads, weight(prefix + ".wo"), optional_weight(prefix + ".bo"));
  return hooked_sublayer_output(prefix, std::move(out));
}

DTensor ForwardPass::hooked_sublayer_output(const std::string& prefix, DTensor out) {
  if (!opt_.hooks.sublayer_output) return out;
  Tensor t = be_.download(out);
  opt_.hooks.sublayer_output(prefix, t);
  return be_.upload(t);
}

DTensor ForwardPass::hooked_stack_input(const std::string& stack, DTensor x) {
  if (!opt_.hooks.stack_input) return x;
  Tensor t = be_.download(x);
  opt_.hooks.stack_input(stack, t);
  return be_.upload(t);
}

DTensor ForwardPass::hooked_residual(const std::string& prefix, DTensor x) {
  if (!opt_.hooks.residual) return x;
  Tensor t = be_.download(x);
  opt_.hooks.residual(prefix, t);
  return be_.upload(t);
}

DTensor ForwardPass::hooked_norm(const std::string& norm, const DTensor& input, DTensor output) {
  if (!opt_.hooks.norm) return output;
  Tensor out = be_.download(output);
  opt_.hooks.norm(norm, be_.download(input), out);
  return be_.upload(out);
}

DTensor ForwardPass::layer_output(const std::string& layer, const DTensor& input, DTensor output) {
  if (!opt_.hooks.layer) return output;
  Tensor out = be_.download(output);
  opt_.hooks.layer(layer, be_.download(input), out);
  return be_.upload(out);
}

Activation BackendExecutor::backend_activation(FfnActivation kind) {
  switch (kind) {
    case FfnActivation::ReLU: return Activation::ReLU;
    case FfnActivation::Gelu: return Activation::GeluErf;
    case FfnActivation::GeluTanh: return Activation::GeluTanh;
    case FfnActivation::Silu: return Activation::Silu;
  }
  return Activation::ReLU;
}

DTensor ForwardPass::embed(const std::vector<TokenInfo>& tokens, const std::string& positional_name) {
  BackendExecutor e(*this);
  return add_positions(embed_tokens(e, c_, token_ids(tokens)), tokens, positional_name);
}

DTensor ForwardPass::embed_patches(const Tensor& pixels, const Tensor& cls_fix,
                                   const std::vector<TokenInfo>& tokens,
                                   const std::string& positional_name) {
  DTensor x = be_.linear(be_.upload(pixels), weight("embed.patch.weight"), weight("embed.patch.bias"));
  if (!cls_fix.data.empty()) x = be_.add(x, be_.upload(cls_fix));  // row 0 becomes embed.cls
  return add_positions(x, tokens, positional_name);
}

DTensor ForwardPass::add_positions(DTensor x, const std::vector<TokenInfo>& tokens,
                                   const std::string& positional_name) {
  const int64_t L = static_cast<int64_t>(tokens.size());
  const int64_t first = past_;  // position of tokens[0]: after a cached prefix, else 0
  std::vector<int32_t> types;   // BERT segment embeddings, row = TokenInfo::type
  if (c_.embeddings.token_types > 0) {
    types.reserve(tokens.size());
    for (const auto& t : tokens) {
      if (t.type < 0 || t.type >= c_.embeddings.token_types)
        throw AtlasError("token type " + std::to_string(t.type) + " of \"" + t.label +
                         "\" is outside the model's " +
                         std::to_string(c_.embeddings.token_types) + " token types");
      types.push_back(t.type);
    }
  }
  const bool traced = opt_.trace.positional;
  struct TracePositions {  // the rows added, as the piece computes them
    ForwardPass& pass;
    const std::string& name;
    bool traced;
    void operator()(Tensor sinusoids) {
      if (traced)
        pass.trace_.add(name, "positional encoding added to the embeddings [L, d]",
                        std::move(sinusoids));
    }
    void operator()(const DTensor& learned) {
      if (traced)
        pass.trace_.add(name, "learned positional embeddings of the positions used [L, d]",
                        pass.be_.download(learned));
    }
  };
  BackendExecutor e(*this);
  x = atlas::add_positions(e, c_, x, L, first, types,
                           TracePositions{*this, positional_name, traced});
  // Nothing is added where positions act on queries and keys: their own arrays instead.
  if (qk_positions_ && traced) qk_positions_->trace(trace_, positional_name, first, L);
  return x;
}

void ForwardPass::layer_done(const std::string& layer, const DTensor& x) {
  if (opt_.trace.hidden) trace_later(layer + ".hidden", "hidden state after the layer [L, d]", x);
  std::string stage = layer;  // "encoder.layer2" -> "encoder layer 2"
  if (const size_t at = stage.find(".layer"); at != std::string::npos)
    stage.replace(at, 6, " layer ");
  step(stage);
}

DTensor ForwardPass::encoder(DTensor x, const std::vector<uint8_t>& key_valid) {
  if (has_reversible_layers(c_)) {  // Reformer's reversible layers (StackKindModule)
    AttentionMask m;
    m.key_valid = key_valid;
    return stack_kind_module(c_)->reversible_layers(*this, x, "encoder", c_.n_layers, m, "attn");
  }
  BackendExecutor e(*this);
  return encoder_stack(e, c_, std::move(x), key_valid);
}

DTensor ForwardPass::decoder(DTensor x, const DTensor* memory, const std::vector<uint8_t>& self_valid,
                             const std::vector<uint8_t>& memory_valid) {
  if (has_reversible_layers(c_) && !memory) {
    AttentionMask m;
    m.causal = true;
    m.key_valid = self_valid;
    return stack_kind_module(c_)->reversible_layers(*this, x, "decoder", c_.decoder_layers(), m,
                                                    "self_attn");
  }
  BackendExecutor e(*this);
  return decoder_stack(e, c_, std::move(x), memory, self_valid, memory_valid);
}

void ForwardPass::trace_later(std::string name, std::string meaning, DTensor t, DType dtype) {
  if (!trace_.records(name)) return;  // a map TraceOptions::only_maps leaves out: never downloaded
  pending_.push_back({trace_.arrays.size(), t});
  trace_.add(std::move(name), std::move(meaning), Tensor{}, dtype);
}

Tensor ForwardPass::download_pending(DTensor also) {
  std::vector<DTensor> wanted;
  for (Pending& p : pending_) wanted.push_back(std::move(p.tensor));
  const bool with_also = static_cast<bool>(also);
  if (with_also) wanted.push_back(std::move(also));
  std::vector<Tensor> got = be_.take_all(std::move(wanted));
  for (size_t i = 0; i < pending_.size(); ++i) trace_.arrays[pending_[i].index].tensor = std::move(got[i]);
  pending_.clear();
  return with_also ? std::move(got.back()) : Tensor{};
}

DTensor ForwardPass::output_logits(const DTensor& h) {
  if (c_.output == OutputHead::None) return {};
  DTensor table = weight(c_.output == OutputHead::Tied ? "embed.tokens" : "output.weight");
  if (c_.fixnorm) table = be_.row_normalize(table, 1e-5f);
  DTensor x = h;
  if (c_.head.transform) {  // BERT's MLM head: dense, activation, norm
    x = be_.linear(x, weight("output.transform.weight"), weight("output.transform.bias"));
    x = norm(be_.activation(x, BackendExecutor::backend_activation(c_.activation)),
             "output.transform_norm");
  }
  return be_.linear(x, table, optional_weight("output.bias"));
}

}  // namespace atlas
