#pragma once
// The memory guard: before a forward pass, what the run will hold (the traced attention maps
// dominate: heads x L x L floats per layer) is estimated and compared with the memory this
// process may use. A run that would not fit is refused up front, with the estimate and the
// longest input that fits, instead of failing mid-way or meeting the OOM killer.
#include <cstdint>
#include <string>

#include "core/config/config.h"
#include "core/model/memory_limits.h"
#include "core/model/trace.h"

namespace atlas {

struct RunMemoryEstimate {
  double attention_maps = 0;  // traced probabilities, scores, masks, queries/keys
  double working = 0;         // the largest layer's scores and probabilities while computed
  double activations = 0;     // hidden states (traced or not), FFN intermediates, logits
  double total() const { return attention_maps + working + activations; }
};

// Memory a forward pass of `config` holds beyond its weights, for a source of `source_len`
// tokens and a target of `target_len` (encoder-decoder models; 0 otherwise).
RunMemoryEstimate estimate_run_memory(const ModelConfig& config, int64_t source_len,
                                      int64_t target_len, const TraceOptions& trace);

// What this process may still allocate and which limit says so: the tightest of MemAvailable,
// its cgroup's limits and RLIMIT_AS (memory_limits.h), plus what the allocator holds free for
// this process (earlier runs' buffers kept for reuse, core/tensor/allocation_policy.h).
// ATLAS_MEMORY_BUDGET (bytes, or with K/M/G suffix) sets it instead, e.g. to keep headroom for
// other work or to test the guard. bytes == 0: unknown (no /proc).
MemoryRoom available_memory();
uint64_t available_memory_bytes();  // available_memory().bytes

// Why a run of `config` over `source_len` tokens records no sparse attention maps, or "" when it
// does: a layer whose head pattern has kMaxTracedIndex nonzeros or more traces no CSR arrays
// (trace_sparse_attention), so its maps are missing from the views.
std::string untraced_sparse_maps_reason(const ModelConfig& config, int64_t source_len);

// The share of available_memory() a run or a model's weights may take: the rest is left to the
// system and to what the estimates do not count. The refusals name it.
inline constexpr double kMemoryShare = 0.9;

// Throws AtlasError when the estimate exceeds kMemoryShare of available_memory_bytes(), naming the
// estimate, what is available, what of it may be used, and the longest input that would fit.
void check_run_memory(const ModelConfig& config, int64_t source_len, int64_t target_len,
                      const TraceOptions& trace);

// Throws AtlasError, before a model's weights are read, when holding them would take more than
// kMemoryShare of available_memory(): `held` is what they occupy as the engine will hold them
// (matrices kept in the file's encoding count their encoded bytes, which are the file's pages;
// float32 conversions count 4 bytes a value). `origin` names the file; `detail` says what the
// bytes are made of ("4.6 GB of Q4_K/Q6_K matrices, 0.5 MB of float32 vectors"); `advice` says
// what would fit instead. The message names the limit that applies (memory_limits.h).
inline constexpr const char* kQuantizeAdvice =
    "A smaller quantization of the same model (a GGUF file: Q4_K_M needs about 0.6 bytes a "
    "parameter, Q8_0 about 1.1) or a smaller model fits";
void check_weights_memory(double held, const std::string& origin, const std::string& detail,
                          const std::string& advice = kQuantizeAdvice);

}  // namespace atlas
