#pragma once
// One forward pass in progress: the building blocks of seed 002's Transformer (norms,
// multi-head attention, FFN, residual sub-layers, embeddings, encoder and decoder stacks) bound
// to a config, a backend, uploaded weights and the trace being recorded. Variants reuse these
// blocks and replace only what their paper changes.
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/backend/backend.h"
#include "core/config/config.h"
#include "core/model/attention_mechanism.h"
#include "core/model/model.h"
#include "core/model/prefix_cache.h"
#include "core/model/qk_positions.h"
#include "core/model/standard_stacks.h"
#include "core/model/trace.h"
#include "core/model/transformer_block.h"

namespace atlas {

using Weights = std::map<std::string, DTensor>;  // one model's weights on one backend

class ForwardPass {
 public:
  ForwardPass(const ModelConfig& config, Backend& backend, const Weights& weights,
              const RunOptions& options, Trace& trace, int64_t steps_total);

  const ModelConfig& config() const { return c_; }
  Backend& backend() { return be_; }
  const RunOptions& options() const { return opt_; }
  Trace& trace() { return trace_; }

  const DTensor& weight(const std::string& name) const;  // throws if absent
  DTensor optional_weight(const std::string& name) const;  // empty handle if absent

  // Incremental forward (prefix_cache.h): the tokens given to embed() and decoder() follow
  // `past` tokens whose decoder self-attention keys and values are `keys` (may be null when
  // past is 0); the keys and values of all past + new tokens are written to `record`.
  void continue_after(const PrefixCache::Keys* keys, int64_t past, PrefixCache::Keys* record);

  // Full-attention maps computed on request (attention_on_demand.h, maps_on_demand): their
  // sub-layers trace queries, keys and the mask's rule instead of the probabilities.
  void compute_maps_on_demand(bool on) { maps_on_demand_ = on; }

  // Checks the cancel flag and reports progress; call once per layer.
  void step(const std::string& stage);

  DTensor norm(const DTensor& x, const std::string& prefix);
  // With TraceOptions::value_norms: traced_name's value_norms companion [heads, Lk], the norm of
  // W^O_h v_j for every head h and key j (v [Lk, heads * d_head], the values every head reads).
  void trace_value_norms(const std::string& traced_name, const DTensor& v, const std::string& prefix);
  // The output projection `prefix.{wo,bo}` of the heads' outputs o [Lq, heads * d_head], after
  // RunOptions::hooks.heads has seen (and maybe edited) them. Every attention variant ends here.
  DTensor attention_output(const DTensor& o, const std::string& prefix);
  // A standard stack's layer `layer` ("decoder.layer2") mapped `input` to `output`: returns the
  // output after RunOptions::hooks.layer has seen it (unchanged without a hook).
  DTensor layer_output(const std::string& layer, const DTensor& input, DTensor output);
  // A sub-layer's output (prefix "...self_attn", "...ffn") and a stack's input after
  // RunOptions::hooks.sublayer_output / stack_input have seen them (unchanged without a hook).
  DTensor hooked_sublayer_output(const std::string& prefix, DTensor out);
  DTensor hooked_stack_input(const std::string& stack, DTensor x);
  // A residual sum after sub-layer `prefix` and norm `norm`'s output after RunOptions::hooks.residual
  // / norm have seen them (unchanged without a hook).
  DTensor hooked_residual(const std::string& prefix, DTensor x);
  DTensor hooked_norm(const std::string& norm, const DTensor& input, DTensor output);
  // Token embedding (+ FixNorm, sqrt(d) scale) plus the absolute positional encoding.
  DTensor embed(const std::vector<TokenInfo>& tokens, const std::string& positional_name);
  // ViT: the patch embedding on the backend (patch_input.h PatchMatrices), then positions.
  DTensor embed_patches(const Tensor& pixels, const Tensor& cls_fix,
                        const std::vector<TokenInfo>& tokens, const std::string& positional_name);
  // After a standard stack's layer ("encoder.layer2"): its hidden state traced when asked,
  // then step().
  void layer_done(const std::string& layer, const DTensor& x);
  DTensor encoder(DTensor x, const std::vector<uint8_t>& key_valid);
  // memory = encoder output for cross-attention, or nullptr for a decoder-only model.
  DTensor decoder(DTensor x, const DTensor* memory, const std::vector<uint8_t>& self_valid,
                  const std::vector<uint8_t>& memory_valid);
  // Output head: logits [L, vocab] (tied or untied), or nullptr-equivalent empty handle.
  DTensor output_logits(const DTensor& h);

  // Records a device tensor in the trace without waiting for it: the download happens in
  // download_pending(), so a recording backend submits the whole forward once instead of once
  // per traced layer.
  void trace_later(std::string name, std::string meaning, DTensor t, DType dtype = DType::F32);
  // Downloads every pending array, and `also` (returned), in one batch. The pass lets go of
  // them, so the CPU backend hands its buffers over instead of copying (Backend::take_all).
  Tensor download_pending(DTensor also);

 private:
  // Positions (sinusoidal or learned), token types and the embedding norm on top of x.
  DTensor add_positions(DTensor x, const std::vector<TokenInfo>& tokens,
                        const std::string& positional_name);

  friend class BackendExecutor;  // the attention sub-layer's operations on this pass

  const ModelConfig& c_;
  Backend& be_;
  const Weights& w_;
  const RunOptions& opt_;
  Trace& trace_;
  int64_t steps_done_ = 0, steps_total_;
  struct Pending {
    size_t index;  // into trace_.arrays
    DTensor tensor;
  };
  std::vector<Pending> pending_;
  // The config's positions on queries and keys, or null (qk_positions.h).
  std::unique_ptr<QkPositions> qk_positions_;
  const PrefixCache::Keys* past_keys_ = nullptr;
  int64_t past_ = 0;
  PrefixCache::Keys* record_ = nullptr;
  bool maps_on_demand_ = false;
};

// What the inference executor keeps of one attention sub-layer call (attention_sublayer.h).
struct BackendAttentionRun {
  std::string prefix;       // its parameters
  std::string traced_name;  // attention_array_name of its site
  const AttentionMechanismModule* mechanism = nullptr;  // its kernel, or null: softmax
  AttentionMask mask;
  QkPositions* positions = nullptr;  // null for cross-attention or no scheme
  bool continues = false;            // decoder self-attention after (or recording) a cached prefix
  int64_t past = 0;                  // cached tokens before this call's
  size_t layer = 0;
  bool on_demand = false;  // full attention above the size budget: q, k and the rule traced
  float scale = 1.0f;      // seed 002's 1/sqrt(d_k)
};

// The inference Executor (core/model/executor.h): a pass's weights and its backend's ops, and
// the attention sub-layer's (core/model/attention_sublayer.h): softmax or a mechanism's kernel on
// the backend, its maps traced and described in the trace's attention-map catalogue (probabilities,
// masks and scores as RunOptions::trace asks), a cached prefix spliced in, the head hooks.
class BackendExecutor {
 public:
  using Value = DTensor;
  using AttentionRun = BackendAttentionRun;
  explicit BackendExecutor(ForwardPass& pass) : pass_(pass), be_(pass.backend()) {}
  DTensor weight(const std::string& name) const { return pass_.weight(name); }
  DTensor optional_weight(const std::string& name) const { return pass_.optional_weight(name); }
  DTensor constant(const Tensor& host) { return be_.upload(host); }
  DTensor embedding(const DTensor& table, const std::vector<int32_t>& ids, float scale) {
    return be_.embedding(table, ids, scale);
  }
  DTensor row_normalize(const DTensor& x, float eps) { return be_.row_normalize(x, eps); }
  DTensor linear(const DTensor& x, const DTensor& w, const DTensor& b) {
    return be_.linear(x, w, b);
  }
  DTensor add(const DTensor& a, const DTensor& b) { return be_.add(a, b); }
  DTensor mul(const DTensor& a, const DTensor& b) { return be_.mul(a, b); }
  DTensor activation(const DTensor& x, FfnActivation kind) {
    return be_.activation(x, backend_activation(kind));
  }
  DTensor layer_norm(const DTensor& x, const DTensor& gamma, const DTensor& beta, float eps) {
    return be_.layer_norm(x, gamma, beta, eps);
  }
  DTensor rms_norm(const DTensor& x, const DTensor& gamma, float eps) {
    return be_.rms_norm(x, gamma, eps);
  }
  DTensor scale_norm(const DTensor& x, const DTensor& g, float eps) {
    return be_.scale_norm(x, g, eps);
  }
  DTensor repeat_heads(const DTensor& x, int64_t groups, int64_t d_head) {
    return be_.repeat_heads(x, groups, d_head);
  }
  DTensor residual_dropout(const DTensor& x) const { return x; }
  // StackExecutor (standard_stacks.h): attention_sublayer over this executor.
  DTensor attention(const DTensor& xq, const DTensor& xkv, const AttentionCall& call);
  bool skip_layer() const { return false; }
  DTensor layer_output(const std::string& layer, const DTensor& input, DTensor output) {
    return pass_.layer_output(layer, input, std::move(output));
  }
  void layer_done(const std::string& layer, const DTensor& x) { pass_.layer_done(layer, x); }
  DTensor ffn_output(const std::string& prefix, DTensor out) {
    return pass_.hooked_sublayer_output(prefix, std::move(out));
  }
  DTensor stack_input(const std::string& stack, DTensor x) { return pass_.hooked_stack_input(stack, std::move(x)); }
  DTensor residual_sum(const std::string& prefix, DTensor x) { return pass_.hooked_residual(prefix, std::move(x)); }
  DTensor norm_output(const std::string& norm, const DTensor& input, DTensor output) {
    return pass_.hooked_norm(norm, input, std::move(output));
  }

  // The backend's kernel of a config's feed-forward activation.
  static Activation backend_activation(FfnActivation kind);

  // AttentionExecutor (attention_sublayer.h). The sub-layer's mask: a decoder's self-attention
  // is causal after any cached prefix, within the config's sliding window; its site in the
  // trace names stack, sublayer, layer (or step), the token spans default to the stack's tokens
  // and the kind to the config's attention.
  BackendAttentionRun begin_attention(const AttentionCall& call, const DTensor& xq,
                                      const DTensor& xkv,
                                      const AttentionMechanismModule* mechanism);
  DTensor qk_positions(const BackendAttentionRun& run, const DTensor& x, int heads);
  void splice_prefix(const BackendAttentionRun& run, DTensor& k, DTensor& v);
  // q, k, v as the kernel will read them: RunOptions::hooks.qkv may edit them, then they are
  // traced as asked.
  void inputs_ready(const BackendAttentionRun& run, DTensor& q, DTensor& k, DTensor& v);
  DTensor softmax_attention(BackendAttentionRun& run, const DTensor& q, const DTensor& k,
                            const DTensor& v);
  // RunOptions::hooks.pattern on the softmax kernel's probabilities r.probs (asked for).
  void edit_pattern(const BackendAttentionRun& run, AttentionResult& r, const DTensor& v);
  // A mechanism's kernel (core/model/attention_kernel.h) over this pass.
  DTensor mechanism_attention(const BackendAttentionRun& run, const AttentionMechanismModule& m,
                              const DTensor& xq, const DTensor& q, const DTensor& k,
                              const DTensor& v);
  DTensor finish_attention(const BackendAttentionRun& run, const DTensor& heads) {
    return attention_output(heads, run.prefix);
  }
  // The heads' outputs through `prefix.{wo,bo}`, after the run's head hooks.
  DTensor attention_output(const DTensor& heads, const std::string& prefix) {
    return pass_.attention_output(heads, prefix);
  }

 protected:  // the variant stacks' executors (xl_stack.h, universal_stack.h, ...) extend it
  ForwardPass& pass_;
  Backend& be_;
};

// The description of one attention sub-layer before its spans and kind are known.
AttentionMap attention_site(std::string stack, std::string sublayer, int64_t layer,
                            int64_t step = -1);

// [Lq, Lk] matrix of 1 (allowed) and 0 (masked), for the trace.
Tensor mask_matrix(const AttentionMask& mask, int64_t lq, int64_t lk);

}  // namespace atlas
