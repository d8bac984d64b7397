#pragma once
// An attention mechanism (the config's attention kind: a sparse pattern, LSH, Performer, a score
// function; Shaw's relations and the adaptive span inside softmax attention) as the centre sees
// it: its kernels on the backend and the tape (attention_kernel.h), its line in `atlas info`,
// what its traced maps cost in the memory budget, whether they can be computed on demand, the
// kind of map it traces, the backend op it needs, what training refuses. A mechanism brings its
// entry by a file mechanism.cpp in its folder (core/variants/<m>/) defining
//   std::vector<const AttentionMechanismModule*> atlas::variants::<m>_mechanisms();
// which cmake/module_registry.cmake lists, so attention_sublayer.h, both executors,
// estimate.cpp, memory_budget.cpp, attention_on_demand.cpp, variant_ops.cpp, image_input.cpp
// and check_trainable name no mechanism. Plain softmax attention has no entry. Which entry's
// kernel computes a sub-layer is attention_mechanism.h's rule.
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/config/config.h"
#include "core/model/attention_kernel.h"
#include "core/model/attention_map.h"

namespace atlas {

// Nonzeros of one sparse self-attention layer over L positions: the union of its heads'
// patterns (an upper bound) and the largest head's.
struct SparseNonzeros {
  double union_bound = 0, largest_head = 0;
  bool heads_differ = false;  // else the trace leaves out the per-head membership flags
};

// The pixel grid of a model over an image's pixels in raster order (image_input.h).
struct PixelGrid {
  int64_t channels = 0;  // bytes per pixel
  int64_t row_bytes = 0;  // bytes per image row (channels x columns)
};

// An entry is written with designated initializers; what it leaves out keeps plain softmax
// attention's behaviour.
struct AttentionMechanismModule {
  const char* name = nullptr;                       // the compatibility table's name
  bool (*used_by)(const ModelConfig& c) = nullptr;  // whether a config's self-attention uses it
  // The kernels of the sub-layers it claims (null: it only modifies what is said below). Shaw
  // and the adaptive span share one (core/variants/relative_attention/relative_kernel.h).
  const AttentionKernel* kernel = nullptr;
  // `atlas info` lines (null: none).
  void (*describe)(const ModelConfig& c, std::ostream& s) = nullptr;
  // Whether a config's maps can be left to be computed on demand (null: they can).
  bool (*maps_on_demand)(const ModelConfig& c) = nullptr;
  // Key positions per query of one dense traced self-attention map over L positions (null: L;
  // 0: no dense map).
  double (*keys_per_query)(const ModelConfig& c, double L) = nullptr;
  // Nonzeros of one layer at length L, whose CSR arrays the trace holds (null: a dense layer).
  SparseNonzeros (*sparse_nonzeros)(const ModelConfig& c, int64_t L) = nullptr;
  // Why no map of a run over L positions is traced ("" or null: they are).
  std::string (*untraced_maps_reason)(const ModelConfig& c, int64_t L) = nullptr;
  // The kind of map a self-attention sub-layer traces when its kernel has sparse_maps.
  AttentionMapKind sparse_map_kind = AttentionMapKind::Sparse;
  // The host op it runs when a backend has no kernel for it (Op::Count, not an op: none).
  Op host_op = Op::Count;
  // The pixel grid of a model reading images pixel by pixel (null: it reads no pixels).
  std::optional<PixelGrid> (*pixel_grid)(const ModelConfig& c) = nullptr;
  // The positions a training task's examples need at least (null: no more than the config's).
  int64_t (*min_positions)(const ModelConfig& c) = nullptr;
  // What check_trainable names when training refuses a config with it (null, or returning
  // nullptr: nothing refused).
  const char* (*untrainable)(const ModelConfig& c) = nullptr;
};

// The entries a config uses, in folder-name order.
std::vector<const AttentionMechanismModule*> mechanisms_for(const ModelConfig& c);
// The first entry a config uses with a sparse_nonzeros hook (nullptr: dense self-attention).
const AttentionMechanismModule* sparse_trace_mechanism(const ModelConfig& c);
// Every mechanism's entry (generated from the folders of core/variants/).
std::vector<const AttentionMechanismModule*> generated_variant_mechanisms();

// For the entries' maps_on_demand.
inline bool never_on_demand(const ModelConfig&) { return false; }

}  // namespace atlas
