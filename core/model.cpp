// The forward pass of seed 002's Transformer with the composition options of DESIGN.md:
// encoder / decoder / encoder-decoder stacks, post- or pre-norm, LayerNorm or ScaleNorm,
// sinusoidal or learned positions, tied or untied output. Every op goes through a Backend.
#include "model.h"

#include <cmath>
#include <map>
#include <mutex>

#include "error.h"
#include "positional.h"

namespace atlas {

namespace {

// The weights of one model uploaded to one backend, looked up by name.
using Weights = std::map<std::string, DTensor>;

struct Pass {
  const ModelConfig& c;
  Backend& be;
  const Weights& w;
  const RunOptions& opt;
  Trace& trace;
  int64_t steps_done = 0, steps_total = 1;

  const DTensor& W(const std::string& name) const {
    auto it = w.find(name);
    if (it == w.end()) throw AtlasError("internal: weight " + name + " not uploaded");
    return it->second;
  }
  DTensor maybe(const std::string& name) const {
    auto it = w.find(name);
    return it == w.end() ? DTensor{} : it->second;
  }

  void step(const std::string& stage) {
    if (opt.cancel && opt.cancel->load()) throw Cancelled();
    ++steps_done;
    if (opt.progress) opt.progress(double(steps_done) / double(steps_total), stage);
  }

  DTensor norm(const DTensor& x, const std::string& prefix) {
    if (c.norm == NormKind::LayerNorm)
      return be.layer_norm(x, W(prefix + ".gamma"), W(prefix + ".beta"), c.norm_eps);
    return be.scale_norm(x, W(prefix + ".g"), c.norm_eps);
  }

  Tensor mask_matrix(const AttentionMask& m, int64_t lq, int64_t lk) {
    Tensor t({lq, lk});
    for (int64_t i = 0; i < lq; ++i)
      for (int64_t j = 0; j < lk; ++j) t.data[i * lk + j] = m.is_allowed(i, j, lk) ? 1.0f : 0.0f;
    return t;
  }

  // Multi-head attention sub-layer (seed 002 eq. for MultiHead): projections, heads, output.
  DTensor attention(const DTensor& xq, const DTensor& xkv, const std::string& prefix,
                    const std::string& traced_name, AttentionMask mask) {
    DTensor q = be.linear(xq, W(prefix + ".wq"), maybe(prefix + ".bq"));
    DTensor k = be.linear(xkv, W(prefix + ".wk"), maybe(prefix + ".bk"));
    DTensor v = be.linear(xkv, W(prefix + ".wv"), maybe(prefix + ".bv"));
    AttentionArgs args;
    args.heads = static_cast<int>(c.n_heads);
    args.scale = 1.0f / std::sqrt(static_cast<float>(c.d_head()));
    args.want_probs = opt.trace.attention;
    args.want_scores = opt.trace.scores;
    const int64_t lq = xq.shape[0], lk = xkv.shape[0];
    if (opt.trace.masks)
      trace.add(traced_name + ".mask", "allowed keys (1) per query [Lq, Lk]",
                mask_matrix(mask, lq, lk), DType::I32);
    args.mask = std::move(mask);
    AttentionResult r = be.attention(q, k, v, args);
    if (args.want_probs)
      trace.add(traced_name, "attention probabilities [heads, Lq, Lk]", be.download(r.probs));
    if (args.want_scores)
      trace.add(traced_name + ".scores", "pre-softmax scores q.k/sqrt(d_head), masked = -inf "
                "[heads, Lq, Lk]", be.download(r.scores));
    return be.linear(r.out, W(prefix + ".wo"), maybe(prefix + ".bo"));
  }

  DTensor ffn(const DTensor& x, const std::string& prefix) {
    DTensor h = be.linear(x, W(prefix + ".w1"), maybe(prefix + ".b1"));
    Activation a = c.activation == FfnActivation::ReLU   ? Activation::ReLU
                   : c.activation == FfnActivation::Gelu ? Activation::GeluErf
                                                         : Activation::GeluTanh;
    return be.linear(be.activation(h, a), W(prefix + ".w2"), maybe(prefix + ".b2"));
  }

  // residual + sub-layer with the configured norm placement
  template <class F>
  DTensor sublayer(const DTensor& x, const std::string& norm_prefix, F&& f) {
    if (c.norm_position == NormPosition::Pre) return be.add(x, f(norm(x, norm_prefix)));
    return norm(be.add(x, f(x)), norm_prefix);
  }

  DTensor embed(const std::vector<TokenInfo>& tokens, const std::string& positional_name) {
    std::vector<int32_t> ids;
    ids.reserve(tokens.size());
    for (const auto& t : tokens) ids.push_back(t.id);
    const int64_t L = static_cast<int64_t>(ids.size());
    const float s = c.scale_embedding ? std::sqrt(static_cast<float>(c.d_model)) : 1.0f;
    DTensor table = W("embed.tokens");
    if (c.fixnorm) table = be.row_normalize(table, 1e-5f);
    DTensor x = be.embedding(table, ids, s);
    if (c.positional == Positional::Sinusoidal) {
      Tensor pe = sinusoid_table(L, c.d_model, c.sinusoid_layout);
      x = be.add(x, be.upload(pe));
      if (opt.trace.positional)
        trace.add(positional_name, "positional encoding added to the embeddings [L, d]",
                  std::move(pe));
    } else if (c.positional == Positional::Learned) {
      std::vector<int32_t> pos(static_cast<size_t>(L));
      for (int64_t i = 0; i < L; ++i) pos[static_cast<size_t>(i)] = static_cast<int32_t>(i);
      DTensor pe = be.embedding(W("embed.positions"), pos, 1.0f);
      if (opt.trace.positional)
        trace.add(positional_name, "learned positional embeddings of the positions used [L, d]",
                  be.download(pe));
      x = be.add(x, pe);
    }
    return x;
  }

  DTensor encoder(DTensor x, const std::vector<uint8_t>& key_valid) {
    const int64_t L = x.shape[0];
    for (int64_t i = 0; i < c.n_layers; ++i) {
      const std::string p = "encoder.layer" + std::to_string(i);
      AttentionMask m;
      m.key_valid = key_valid;
      x = sublayer(x, p + ".attn_norm",
                   [&](const DTensor& h) { return attention(h, h, p + ".attn", p + ".attn", m); });
      x = sublayer(x, p + ".ffn_norm", [&](const DTensor& h) { return ffn(h, p + ".ffn"); });
      if (opt.trace.hidden) trace.add(p + ".hidden", "hidden state after the layer [L, d]", be.download(x));
      step("encoder layer " + std::to_string(i));
    }
    (void)L;
    if (c.norm_position == NormPosition::Pre) x = norm(x, "encoder.final_norm");
    return x;
  }

  DTensor decoder(DTensor x, const DTensor* memory, const std::vector<uint8_t>& self_valid,
                  const std::vector<uint8_t>& memory_valid) {
    for (int64_t i = 0; i < c.decoder_layers(); ++i) {
      const std::string p = "decoder.layer" + std::to_string(i);
      AttentionMask self_mask;
      self_mask.causal = true;
      self_mask.key_valid = self_valid;
      x = sublayer(x, p + ".self_attn_norm", [&](const DTensor& h) {
        return attention(h, h, p + ".self_attn", p + ".self_attn", self_mask);
      });
      if (memory) {
        AttentionMask cross;
        cross.key_valid = memory_valid;
        x = sublayer(x, p + ".cross_attn_norm", [&](const DTensor& h) {
          return attention(h, *memory, p + ".cross_attn", p + ".cross_attn", cross);
        });
      }
      x = sublayer(x, p + ".ffn_norm", [&](const DTensor& h) { return ffn(h, p + ".ffn"); });
      if (opt.trace.hidden) trace.add(p + ".hidden", "hidden state after the layer [L, d]", be.download(x));
      step("decoder layer " + std::to_string(i));
    }
    if (c.norm_position == NormPosition::Pre) x = norm(x, "decoder.final_norm");
    return x;
  }
};

std::vector<uint8_t> key_validity(const std::vector<TokenInfo>& tokens, int64_t pad_id) {
  if (pad_id < 0) return {};
  std::vector<uint8_t> valid(tokens.size());
  bool any_pad = false;
  for (size_t i = 0; i < tokens.size(); ++i) {
    valid[i] = tokens[i].id != pad_id;
    any_pad |= !valid[i];
  }
  return any_pad ? valid : std::vector<uint8_t>{};
}

void check_tokens(const ModelConfig& c, const std::vector<TokenInfo>& tokens, const char* what) {
  if (tokens.empty()) throw AtlasError(std::string(what) + " is empty: nothing to run");
  if (static_cast<int64_t>(tokens.size()) > c.max_positions)
    throw AtlasError(std::string(what) + " has " + std::to_string(tokens.size()) +
                     " tokens, more than the model's max_positions " +
                     std::to_string(c.max_positions));
  for (const auto& t : tokens)
    if (t.id < 0 || t.id >= c.vocab_size)
      throw AtlasError(std::string(what) + ": token id " + std::to_string(t.id) +
                       " is outside the vocabulary of " + std::to_string(c.vocab_size));
}

// Uploaded weights are kept per backend instance so repeated runs upload once.
struct WeightCache {
  std::mutex mutex;
  std::map<uint64_t, std::shared_ptr<Weights>> by_backend;
};

}  // namespace

struct ModelPrivate {
  std::unique_ptr<Backend> cpu = make_cpu_backend();
  WeightCache cache;
};

Model::Model(ModelConfig config, ParamStore params)
    : config_(std::move(config)), params_(std::move(params)) {
  validate_config(config_, config_.name.empty() ? "model" : config_.name);
  warnings_ = check_params(config_, params_, config_.name.empty() ? "model" : config_.name);
  tokenizer_ = make_tokenizer(config_.tokenizer);
  if (tokenizer_->vocab_size() > config_.vocab_size)
    throw AtlasError("tokenizer has " + std::to_string(tokenizer_->vocab_size()) +
                     " tokens but vocab_size is " + std::to_string(config_.vocab_size));
  private_ = std::make_shared<ModelPrivate>();
}

RunResult Model::run(const std::string& source, const std::string& target,
                     const RunOptions& options) const {
  std::vector<TokenInfo> src = tokenizer_->encode(source);
  std::vector<TokenInfo> tgt;
  if (config_.architecture == Architecture::EncoderDecoder) {
    if (config_.bos_id >= 0) tgt.push_back({static_cast<int32_t>(config_.bos_id), "<bos>"});
    auto rest = tokenizer_->encode(target);
    tgt.insert(tgt.end(), rest.begin(), rest.end());
  } else if (!target.empty()) {
    throw AtlasError("a target text is only used by encoder-decoder models; this model is " +
                     std::string(config_.architecture == Architecture::Encoder ? "an encoder"
                                                                               : "a decoder"));
  }
  return forward(src, tgt, options);
}

RunResult Model::forward(const std::vector<TokenInfo>& source_in,
                         const std::vector<TokenInfo>& target, const RunOptions& options) const {
  const ModelConfig& c = config_;
  std::vector<TokenInfo> source = source_in;
  if (options.pad_to > 0 && options.pad_to > static_cast<int64_t>(source.size())) {
    if (c.pad_id < 0) throw AtlasError("padding asked for, but the model has no pad_id");
    const TokenInfo pad{static_cast<int32_t>(c.pad_id), "<pad>"};
    source.resize(static_cast<size_t>(options.pad_to), pad);
  }
  const bool enc_dec = c.architecture == Architecture::EncoderDecoder;
  check_tokens(c, source, enc_dec ? "source text" : "input text");
  if (enc_dec) check_tokens(c, target, "target text");
  if (options.threads > 0) Eigen::setNbThreads(options.threads);

  Backend& be = options.backend ? *options.backend : *private_->cpu;
  std::shared_ptr<Weights> weights;
  {
    std::lock_guard<std::mutex> lock(private_->cache.mutex);
    auto& slot = private_->cache.by_backend[be.instance_id()];
    if (!slot) {
      slot = std::make_shared<Weights>();
      for (const auto& [name, t] : params_) slot->emplace(name, be.upload(t));
    }
    weights = slot;
  }

  RunResult result;
  Trace& trace = result.trace;
  Pass pass{c, be, *weights, options, trace};
  pass.steps_total = (c.has_encoder() ? c.n_layers : 0) + (c.has_decoder() ? c.decoder_layers() : 0);

  DTensor h;
  if (c.architecture == Architecture::Encoder) {
    trace.source_tokens = source;
    h = pass.encoder(pass.embed(source, "positional"), key_validity(source, c.pad_id));
  } else if (c.architecture == Architecture::Decoder) {
    trace.source_tokens = source;
    h = pass.decoder(pass.embed(source, "positional"), nullptr, key_validity(source, c.pad_id), {});
  } else {
    trace.source_tokens = source;
    trace.target_tokens = target;
    const auto src_valid = key_validity(source, c.pad_id);
    DTensor memory = pass.encoder(pass.embed(source, "positional"), src_valid);
    h = pass.decoder(pass.embed(target, "decoder.positional"), &memory,
                     key_validity(target, c.pad_id), src_valid);
  }

  if (c.output != OutputHead::None) {
    DTensor table = pass.W(c.output == OutputHead::Tied ? "embed.tokens" : "output.weight");
    if (c.fixnorm) table = be.row_normalize(table, 1e-5f);
    result.output = be.download(be.linear(h, table, DTensor{}));
    result.is_logits = true;
    trace.add("logits", "output logits per position [L, vocab]", result.output);
  } else {
    result.output = be.download(h);
    trace.add("output", "final hidden states [L, d]", result.output);
  }
  return result;
}

}  // namespace atlas
