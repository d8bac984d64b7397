#pragma once
// A model: config + parameters + tokenizer, run through a Backend. The forward pass follows
// seed 002 (vanilla encoder-decoder) with the options of "The model as composition".
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/model/activation_hooks.h"
#include "core/config/config.h"
#include "core/model/params.h"
#include "core/model/prefix_cache.h"
#include "core/tokenizers/tokenizer.h"
#include "core/model/trace.h"

namespace atlas {

struct ModelPrivate;

struct RunOptions {
  TraceOptions trace;
  const std::atomic<bool>* cancel = nullptr;  // checked between layers; throws Cancelled
  std::function<void(double fraction, const std::string& stage)> progress;
  int threads = 0;            // 0 = every core
  Backend* backend = nullptr;  // nullptr = the CPU reference backend
  int64_t pad_to = 0;         // pad the source with pad_id up to this length (padding mask)
  // Keys and values of the previous run of this input (core/model/prefix_cache.h): a causal
  // model then computes only the tokens after the prefix it shares with that run.
  PrefixCache* prefix_cache = nullptr;
  // Activation edits (ablations, patching); a run with hooks never uses the prefix cache.
  ActivationHooks hooks;
  // Told, before any layer runs, what the run will hold beyond the weights and what this process
  // may allocate (core/model/memory_budget.h), so the app can show a run close to the limit.
  std::function<void(double needed_bytes, double available_bytes)> memory_estimate;
};

struct RunResult {
  Tensor output;  // logits [L, vocab] when the model has an output head, else hidden [L, d]
  bool is_logits = false;
  Trace trace;
};

class Model {
 public:
  // Validates parameters against the config (throws AtlasError on mismatch). `monitor` (may be
  // null) hears of the weight scan and may cancel it (core/model/load_monitor.h).
  Model(ModelConfig config, ParamStore params, const LoadMonitor* monitor = nullptr);

  const ModelConfig& config() const { return config_; }
  const ParamStore& params() const { return params_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const std::vector<std::string>& warnings() const { return warnings_; }

  // Tokenizes and runs. `target` is the decoder input of an encoder-decoder model and must
  // be empty otherwise.
  RunResult run(const std::string& source, const std::string& target,
                const RunOptions& options) const;
  // The token lists run() feeds to forward(): source, and the target with BOS first for an
  // encoder-decoder model. Throws AtlasError on over-long input or a target without a decoder.
  std::pair<std::vector<TokenInfo>, std::vector<TokenInfo>> tokenize(const std::string& source,
                                                                     const std::string& target) const;
  RunResult forward(const std::vector<TokenInfo>& source, const std::vector<TokenInfo>& target,
                    const RunOptions& options) const;
  // The same, for a caller that keeps results shared (the app): with options.prefix_cache, the
  // cache keeps this very result instead of a copy (hundreds of MB of maps on long inputs).
  std::shared_ptr<RunResult> run_shared(const std::string& source, const std::string& target,
                                        const RunOptions& options) const;
  std::shared_ptr<RunResult> forward_shared(const std::vector<TokenInfo>& source,
                                            const std::vector<TokenInfo>& target,
                                            const RunOptions& options) const;

 private:
  // The forward itself; forward() then finalizes the trace's attention-map catalogue.
  // `prefix` receives what the prefix cache keeps of this run (forward/forward_shared store it).
  RunResult forward_traced(const std::vector<TokenInfo>& source,
                           const std::vector<TokenInfo>& target, const RunOptions& options,
                           PrefixCache::Pending& prefix) const;
  ModelConfig config_;
  ParamStore params_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::vector<std::string> warnings_;
  std::shared_ptr<ModelPrivate> private_;  // CPU backend and uploaded-weight cache
};

}  // namespace atlas
