// The forward pass of seed 002's Transformer with the composition options of DESIGN.md:
// encoder / decoder / encoder-decoder stacks, post- or pre-norm, LayerNorm or ScaleNorm,
// sinusoidal or learned positions, tied or untied output. Every op goes through a Backend.
#include "core/model/model.h"

#include "core/model/prefix_cache.h"
#include "core/model/stack_kind_module.h"
#include "core/model/stack_route.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>

#include "core/tensor/error.h"
#include "core/analysis/attention_rollout.h"
#include "core/model/forward_pass.h"
#include "core/model/attention_on_demand.h"
#include "core/model/memory_budget.h"
#include "core/tokenizers/token_budget.h"
#include "core/input/patch_input.h"
#include "core/analysis/logit_lens.h"
#include "core/variants/transformer_xl/transformer_xl.h"
#include "core/variants/universal/universal.h"
#include "core/model/model_arrays.h"

namespace atlas {

namespace {

// The trace keeps its own copy of the logits (RunResult::output is the other): 206 MB at 1024
// tokens of GPT-2, copied on every core.
Tensor copy_in_parallel(const Tensor& t) {
  Tensor out = Tensor::uninitialized(t.shape);
  constexpr int64_t kChunk = int64_t{1} << 20;
  const int64_t n = t.numel(), chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for num_threads(cpu_threads()) schedule(static) if (chunks > 1)
  for (int64_t c = 0; c < chunks; ++c)
    std::copy(t.data.begin() + c * kChunk, t.data.begin() + std::min(n, (c + 1) * kChunk), out.data.begin() + c * kChunk);
  return out;
}

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

}  // namespace

struct ModelPrivate {
  // Uploaded weights are kept per backend instance so repeated runs upload once. An entry
  // whose backend was destroyed is dropped at the next forward of the model (its tensors may
  // hold device memory and the device context alive). A member type: ModelPrivate has
  // external linkage, so its members' types may not live in the anonymous namespace.
  struct WeightCache {
    struct Entry {
      std::weak_ptr<const void> backend_alive;
      std::shared_ptr<Weights> weights;
    };
    std::mutex mutex;
    std::map<uint64_t, Entry> by_backend;
  };
  std::unique_ptr<Backend> cpu = make_cpu_backend();
  WeightCache cache;
};

Model::Model(ModelConfig config, ParamStore params, const LoadMonitor* monitor)
    : config_(std::move(config)), params_(std::move(params)) {
  validate_config(config_, config_.name.empty() ? "model" : config_.name);
  warnings_ = check_params(config_, params_, config_.name.empty() ? "model" : config_.name, monitor);
  tokenizer_ = make_tokenizer(config_.tokenizer);
  if (tokenizer_->vocab_size() > config_.vocab_size)
    throw AtlasError("tokenizer has " + std::to_string(tokenizer_->vocab_size()) +
                     " tokens but vocab_size is " + std::to_string(config_.vocab_size));
  private_ = std::make_shared<ModelPrivate>();
}

std::pair<std::vector<TokenInfo>, std::vector<TokenInfo>> Model::tokenize(
    const std::string& source, const std::string& target) const {
  const bool enc_dec = config_.architecture == Architecture::EncoderDecoder;
  check_token_budget(*tokenizer_, source, config_.max_positions,
                     enc_dec ? "the source text" : "the input text");
  std::vector<TokenInfo> src = tokenizer_->encode(source);
  std::vector<TokenInfo> tgt;
  if (enc_dec) {
    check_token_budget(*tokenizer_, target, config_.max_positions, "the target text");
    if (config_.bos_id >= 0) tgt.push_back({static_cast<int32_t>(config_.bos_id), "<bos>"});
    auto rest = tokenizer_->encode(target);
    tgt.insert(tgt.end(), rest.begin(), rest.end());
  } else if (!target.empty()) {
    throw AtlasError("a target text is only used by encoder-decoder models; this model is " +
                     std::string(config_.architecture == Architecture::Encoder ? "an encoder"
                                                                               : "a decoder"));
  }
  return {std::move(src), std::move(tgt)};
}

RunResult Model::run(const std::string& source, const std::string& target,
                     const RunOptions& options) const {
  const auto [src, tgt] = tokenize(source, target);
  return forward(src, tgt, options);
}

std::shared_ptr<RunResult> Model::run_shared(const std::string& source, const std::string& target,
                                             const RunOptions& options) const {
  const auto [src, tgt] = tokenize(source, target);
  return forward_shared(src, tgt, options);
}

RunResult Model::forward(const std::vector<TokenInfo>& source_in,
                         const std::vector<TokenInfo>& target, const RunOptions& options) const {
  PrefixCache::Pending prefix;
  RunResult r = forward_traced(source_in, target, options, prefix);
  r.trace.only_maps = options.trace.only_maps;  // host models' traces too (their arrays are dropped here)
  r.trace.finalize_attention_maps();
  if (prefix.cache) prefix.cache->store(std::move(prefix), std::make_shared<const RunResult>(r));
  return r;
}

std::shared_ptr<RunResult> Model::forward_shared(const std::vector<TokenInfo>& source,
                                                 const std::vector<TokenInfo>& target,
                                                 const RunOptions& options) const {
  PrefixCache::Pending prefix;
  auto r = std::make_shared<RunResult>(forward_traced(source, target, options, prefix));
  r->trace.only_maps = options.trace.only_maps;  // host models' traces too (their arrays are dropped here)
  r->trace.finalize_attention_maps();
  if (prefix.cache) prefix.cache->store(std::move(prefix), r);
  return r;
}

RunResult Model::forward_traced(const std::vector<TokenInfo>& source_in,
                                const std::vector<TokenInfo>& target, const RunOptions& options,
                                PrefixCache::Pending& prefix) const {
  const ModelConfig& c = config_;
  if (options.trace.logit_lens > 0 && !options.trace.hidden) {
    // The lens reads every layer's hidden state: trace them, then drop them (not asked for).
    RunOptions with_hidden = options;
    with_hidden.trace.hidden = true;
    RunResult r = forward(source_in, target, with_hidden);
    std::erase_if(r.trace.arrays, [](const TracedArray& t) {
      return t.name.size() > 7 && t.name.compare(t.name.size() - 7, 7, ".hidden") == 0;
    });
    return r;
  }
  std::vector<TokenInfo> source = source_in;
  if (options.pad_to > 0 && options.pad_to > static_cast<int64_t>(source.size())) {
    if (c.pad_id < 0) throw AtlasError("padding asked for, but the model has no pad_id");
    const TokenInfo pad{static_cast<int32_t>(c.pad_id), "<pad>"};
    source.resize(static_cast<size_t>(options.pad_to), pad);
  }
  const StackRoute route = stack_route(c);  // core/model/stack_route.h
  if (route == StackRoute::HostModel) {
    // The non-Transformer models of seed 004 compute everything on the host; a device backend says so.
    if (options.backend) options.backend->note_host_compute(Op::HostModel);
    // The recurrent seq2seq / Pointer Net, the NTM, SNAIL, SAGAN (core/model/stack_kind_module.h).
    return host_model_kind(c)->forward(c, params_, source, target, options);
  }
  const bool enc_dec = c.architecture == Architecture::EncoderDecoder;
  check_tokens(c, source, enc_dec ? "source text" : "input text");
  if (enc_dec) check_tokens(c, target, "target text");
  check_run_memory(c, static_cast<int64_t>(source.size()), static_cast<int64_t>(target.size()),
                   options.trace);
  if (options.memory_estimate)
    options.memory_estimate(estimate_run_memory(c, static_cast<int64_t>(source.size()),
                                                static_cast<int64_t>(target.size()), options.trace)
                                .total(),
                            double(available_memory_bytes()));
  if (options.threads > 0) set_cpu_threads(options.threads);

  Backend& be = options.backend ? *options.backend : *private_->cpu;
  std::shared_ptr<Weights> weights;
  {
    std::lock_guard<std::mutex> lock(private_->cache.mutex);
    auto& entries = private_->cache.by_backend;
    for (auto it = entries.begin(); it != entries.end();)
      it = it->second.backend_alive.expired() ? entries.erase(it) : std::next(it);
    auto& slot = entries[be.instance_id()];
    if (!slot.weights) {
      slot.backend_alive = be.lifetime();
      slot.weights = std::make_shared<Weights>();
      // params_ outlives the cache (both are this model's) and is never changed after construction.
      for (const auto& [name, t] : params_) slot.weights->emplace(name, be.upload_weight(t));
    }
    weights = slot.weights;
  }

  const bool on_demand = maps_on_demand(c, options.trace, static_cast<int64_t>(source.size()),
                                        static_cast<int64_t>(target.size()));
  // A causal model continuing the input of its previous run computes only the new tokens.
  PrefixCache* cache = options.prefix_cache && incremental_forward_applies(c, options)
                           ? options.prefix_cache
                           : nullptr;
  PrefixCache::Reuse reuse;
  if (cache) {
    prefix.cache = cache;
    prefix.who = {weights, be.instance_id(), options.trace, options.pad_to, on_demand};
    for (const TokenInfo& t : source) prefix.ids.push_back(t.id);
    reuse = cache->reuse(prefix.who, prefix.ids);
    prefix.reused = reuse.past;
  }

  RunResult result;
  Trace& trace = result.trace;
  trace.only_maps = options.trace.only_maps;  // Trace::add drops the other maps' arrays
  const StackKindModule* kind = stack_kind_module(c);  // Universal's steps, XL's segments' layers
  ForwardPass pass(c, be, *weights, options, trace,
                   kind && kind->forward_layers
                       ? kind->forward_layers(c, int64_t(source.size()))
                       : (c.has_encoder() ? c.n_layers : 0) + (c.has_decoder() ? c.decoder_layers() : 0));

  pass.compute_maps_on_demand(on_demand);

  DTensor h;
  switch (route) {
    case StackRoute::Universal:  // one shared block applied recurrently (core/variants/universal/universal.cpp)
      trace.source_tokens = source;
      h = universal_forward(pass, source, key_validity(source, c.pad_id));
      break;
    case StackRoute::Xl:  // segment recurrence with memory (core/variants/transformer_xl/transformer_xl.cpp)
      trace.source_tokens = source;
      h = xl_forward(pass, source);
      break;
    case StackRoute::Encoder: {
      trace.source_tokens = source;
      DTensor x;
      if (is_patch_model(c)) {  // ViT: the patch projection is the backend's linear op
        const PatchMatrices m = patch_matrices(c, params_, source);
        x = pass.embed_patches(m.pixels, m.cls_fix, source, model_arrays::kPositional);
      } else {
        x = pass.embed(source, model_arrays::kPositional);
      }
      h = pass.encoder(x, key_validity(source, c.pad_id));
      break;
    }
    case StackRoute::Decoder: {
      trace.source_tokens = source;
      if (cache) pass.continue_after(&reuse.keys, reuse.past, &prefix.keys);
      const std::vector<TokenInfo> fresh(source.begin() + reuse.past, source.end());
      h = pass.decoder(pass.embed(fresh, model_arrays::kPositional), nullptr, key_validity(source, c.pad_id), {});
      break;
    }
    case StackRoute::EncoderDecoder: {
      trace.source_tokens = source;
      trace.target_tokens = target;
      const auto src_valid = key_validity(source, c.pad_id);
      DTensor memory = pass.encoder(pass.embed(source, model_arrays::kPositional), src_valid);
      h = pass.decoder(pass.embed(target, model_arrays::kDecoderPositional), &memory,
                       key_validity(target, c.pad_id), src_valid);
      break;
    }
    case StackRoute::HostModel: break;  // returned above
  }

  DTensor logits = pass.output_logits(h);
  const bool has_logits = static_cast<bool>(logits);
  // One batch: a recording backend submits the whole forward and its traced copies once.
  result.output = pass.download_pending(has_logits ? std::move(logits) : std::move(h));
  if (has_logits) {
    result.is_logits = true;
    trace.add(model_arrays::kLogits, "output logits per position [L, vocab]", copy_in_parallel(result.output));
  } else {
    trace.add("output", "final hidden states [L, d]", result.output);
  }
  if (reuse.past > 0) result = splice_prefix(*reuse.last, std::move(result), reuse.past);
  if (options.trace.logit_lens > 0) add_logit_lens(*this, result, options.trace.logit_lens);
  // What the [CLS] row of a ViT is built from: every encoder map (not with only_maps).
  if (is_patch_model(c) && options.trace.attention && options.trace.only_maps.empty())
    trace.add("encoder.rollout",
              "attention rollout (Abnar & Zuidema): flow from each input token into each token "
              "through all layers, row = receiving token [L, L]",
              attention_rollout(trace, "encoder"));
  return result;
}

}  // namespace atlas
