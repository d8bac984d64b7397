#pragma once
// The Trace: everything a run recorded for the views, the dump and the figure export. It is
// the contract between engine and UI. Arrays are named in the dump scheme
// (`<stack>.layer<i>.<what>`, see docs/dump-format.md) and kept in recording order.
#include <cstdint>
#include <string>
#include <vector>

#include "core/model/attention_map.h"
#include "core/tensor/tensor.h"

namespace atlas {

struct TokenInfo {
  int32_t id = 0;
  std::string label;  // readable, valid UTF-8
  int32_t type = 0;  // token type (BERT segment A = 0, B = 1)
  // Patch-embedding models (ViT): the patch's normalised pixels, [channels, size, size]
  // flattened (patch_input.h); empty for text tokens and for the CLS token.
  std::vector<float> patch = {};
};

// The ids of `tokens`, in order.
inline std::vector<int32_t> token_ids(const std::vector<TokenInfo>& tokens) {
  std::vector<int32_t> ids;
  ids.reserve(tokens.size());
  for (const TokenInfo& t : tokens) ids.push_back(t.id);
  return ids;
}

enum class DType { F32, I32 };

struct TracedArray {
  std::string name;     // e.g. "encoder.layer0.attn"
  std::string meaning;  // one line for the manifest, e.g. "attention probabilities [heads, Lq, Lk]"
  DType dtype = DType::F32;  // I32 arrays hold integral values in a float tensor
  Tensor tensor;
};

// How full-attention maps are kept (TraceOptions::maps).
enum class MapStorage { Auto, Stored, OnDemand };

// What a caller wants recorded. Tracing nothing keeps the forward on its fast path.
struct TraceOptions {
  bool attention = true;   // probabilities per stack/layer/head
  bool scores = false;     // pre-softmax scores
  bool masks = true;       // allowed-key masks per attention layer
  bool positional = true;  // the positional encoding matrix
  bool hidden = false;     // hidden states after every layer
  // Top-k per-layer predictions (the logit lens, core/analysis/logit_lens.h) added after the run; 0 = off.
  // Needs an output head. The hidden states it reads are kept only when `hidden` is set.
  int64_t logit_lens = 0;
  bool qk = false;         // projected queries and keys per attention layer (atlas scores)
  // Per attention map, its value_norms companion [heads, Lk]: |W^O_h v_j|, the size of what key j's
  // value adds through head h (value-weighted attention, core/analysis/value_weighted.h).
  bool value_norms = false;
  // Full-attention maps stored [heads, Lq, Lk], or traced as queries and keys and computed on
  // request (core/model/attention_on_demand.h); Auto: on request above kStoredMapCellsLimit.
  MapStorage maps = MapStorage::Auto;
  // Only these attention maps (catalogue names, e.g. "decoder.layer1.self_attn") are recorded, with
  // their companions and per-map records (the arrays named `<map>.*`); empty = every map. Arrays of
  // no map (logits, hidden states, positions) are recorded as ever. The other maps' arrays are
  // never added to the trace (Trace::records), so their memory is freed layer by layer. A name that
  // no map of the run has is refused once the run ends (Trace::finalize_attention_maps).
  std::vector<std::string> only_maps = {};
  static TraceOptions none() { return {false, false, false, false, false, 0, false}; }
  static TraceOptions all() { return {true, true, true, true, true, 0, false}; }
  bool operator==(const TraceOptions&) const = default;
};

struct Trace {
  std::vector<TokenInfo> source_tokens;  // encoder input, or the decoder-only model's input
  std::vector<TokenInfo> target_tokens;  // decoder input of an encoder-decoder model
  std::vector<TracedArray> arrays;
  // The attention-map catalogue (attention_map.h), in the order the maps were produced.
  std::vector<AttentionMap> attention_maps;

  // The run's TraceOptions::only_maps (empty: every map).
  std::vector<std::string> only_maps;

  // Drops the array when records(name) is false.
  void add(std::string name, std::string meaning, Tensor t, DType dtype = DType::F32);
  // Whether the run keeps `name`: true unless only_maps is set and `name` is, or is named under
  // (`<map>.*`), a map not in only_maps.
  bool records(const std::string& name) const;
  const TracedArray* find(const std::string& name) const;  // nullptr when absent or name is ""
  std::vector<std::string> names() const;

  // A producer describes the attention array it traces (or will trace) as m.array.
  void describe_attention(AttentionMap m);
  const AttentionMap* attention_map(const std::string& array) const;  // nullptr when absent
  // After the run: how each described map is stored (dense, CSR), its companions, its heads; maps whose
  // arrays were not traced are dropped. Throws AtlasError when a dense array's [Lq, Lk]
  // disagrees with its description (a producer's bug, never shown as a mislabelled view). With
  // only_maps: throws AtlasError naming a selected map no producer described (listing the run's
  // maps), and drops the other maps' descriptions and any of their arrays add() could not tell.
  void finalize_attention_maps();
};

// Appends one row to a stacked summary array (span.z [layers, heads], act.halting [steps, L]),
// creating it as [1, row_shape...] on the first row.
void append_trace_row(Trace& trace, const std::string& name, const std::string& meaning,
                      const std::vector<float>& row, Shape row_shape);

// Dense copies of implicit and sparse maps are traced only up to this length (Performer's
// implicit maps, and the masks of sparse layers).
constexpr int64_t kDenseTraceLimit = 4096;

}  // namespace atlas
