#pragma once
// The attention-map catalogue: a typed description of every attention array a run traced, so
// that views, exports and dumps read what an array is (stack, layer, segment, step, kind, which
// tokens its rows and columns are) instead of parsing its name.
//
// The producer of an attention array describes it (the inference attention sub-layer,
// BackendExecutor::begin_attention, for the vanilla, Universal, sparse, Reformer, Performer, Shaw and span sub-layers; the Transformer-XL loop for
// its segments over memory; the seq2seq, SNAIL and SAGAN models for theirs). When the run ends,
// Trace::finalize_attention_maps() records how each map is stored (dense [heads, Lq, Lk], CSR,
// or both) and drops descriptions whose arrays were not traced.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace atlas {

struct Trace;
struct TokenInfo;

enum class AttentionMapKind {
  Self,      // queries and keys are the same tokens
  Cross,     // decoder queries over encoder outputs (or a seq2seq alignment)
  Memory,    // Transformer-XL: keys are the cached memory followed by the segment
  Implicit,  // Performer: rownorm(phi(Q) phi(K)^T), never formed by the forward itself
  Sparse,    // a sparse pattern's probabilities; the CSR arrays hold only the nonzeros
};

// Which token list of the Trace a map's rows or columns index. Positions: no tokens (image
// locations of SAGAN), labelled by index.
enum class TokenSide { Source, Target, Positions };

struct TokenSpan {
  TokenSide side = TokenSide::Source;
  int64_t begin = 0;  // first token of the list
  int64_t count = 0;  // rows (queries) or columns (keys)
};

// The arrays a run traces beside a map: its companions. Their names follow the dump's naming
// scheme (docs/dump-format.md), written in one place, companion_array_name (attention_map.cpp):
// producers name what they trace with it, readers take the names from AttentionMap::companions.
enum class Companion { Indptr, Indices, Values, Allowed, Mask, Scores, Queries, Keys, KeyValid, ValueNorms };

// Each field names a traced array, or is "" when the run did not trace it.
struct AttentionCompanions {
  std::string indptr;       // CSR row pointers over the union of heads [Lq + 1]
  std::string indices;      // CSR key index of each nonzero, ascending per row [nnz]
  std::string values;       // CSR probabilities per head at each nonzero [heads, nnz]
  std::string allowed;      // CSR: 1 where a nonzero is in the head's own pattern [heads, nnz];
                            // "" = every nonzero is every head's
  std::string mask;         // allowed keys (1) per query [Lq, Lk]
  std::string scores;       // pre-softmax scores, -inf where masked [heads, Lq, Lk]
  std::string q;            // projected queries, heads side by side [Lq, heads * d_head]
  std::string k;            // projected keys [Lk, kv_heads * d_head]
  std::string key_valid;    // on-demand maps: 1 for a real key, 0 for padding [Lk]
  std::string value_norms;  // |W^O_h v_j| per head and key [heads, Lk]
  bool operator==(const AttentionCompanions&) const = default;
};

// The name of the companion `c` of the map array `array` ("encoder.layer0.attn" + Scores:
// "encoder.layer0.attn.scores").
std::string companion_array_name(const std::string& array, Companion c);
// The map array and companion that `name` is by the naming scheme, if it is one.
std::optional<std::pair<std::string, Companion>> companion_of(const std::string& name);
// The companions of the map array `array` that `trace` holds.
AttentionCompanions traced_companions(const Trace& trace, const std::string& array);

struct AttentionMap {
  std::string array;     // trace array: dense [heads, Lq, Lk], and/or CSR (companions)
  std::string stack;     // "encoder" | "decoder" | a model's own ("snail", "sagan")
  std::string sublayer;  // "attn" | "self_attn" | "cross_attn"
  int64_t layer = 0;
  int64_t segment = -1;  // Transformer-XL segment; -1 when the model has none
  int64_t step = -1;     // Universal Transformer step, from 1; -1 when none
  int64_t round = -1;    // LSH hash round; -1 for the rounds combined (or no LSH)
  AttentionMapKind kind = AttentionMapKind::Self;
  int64_t heads = 0;
  TokenSpan queries, keys;
  int64_t memory_keys = 0;  // the first memory_keys keys are Transformer-XL memory
  // Grouped-query attention: query head h reads key/value head h / (heads / kv_heads);
  // 0 = one key/value head per query head.
  int64_t kv_heads = 0;
  bool normalized = true;   // rows sum to one over the allowed keys
  // Computed on request (core/model/attention_on_demand.h) rather than stored: the run traced
  // the queries and keys (companions q, k, and key_valid when some keys are padding), and the
  // rule below gives the mask.
  bool on_demand = false;
  float scale = 0.0f;          // multiplies q . k before the softmax
  bool causal = false;         // query i sees keys j <= i + causal_offset...
  int64_t causal_offset = 0;
  int64_t window = 0;          // ...and j > i + causal_offset - window when window > 0
  // Filled by Trace::finalize_attention_maps() from what the run stored:
  bool dense = false;  // `array` holds [heads, Lq, Lk]
  bool csr = false;    // companions indptr, indices and values hold the nonzeros
  AttentionCompanions companions;  // the arrays traced beside this one
};

// "encoder.layer0.attn", "decoder.seg2.layer1.self_attn", "encoder.step3.attn": the dump's
// naming scheme (docs/dump-format.md), from stack, sublayer, layer, segment and step.
std::string attention_array_name(const AttentionMap& m);
// Whether `name` has a map's name by that scheme ("<stack>.layer<i>.<sub>",
// "<stack>.seg<s>.layer<i>.<sub>", "<stack>.step<n>.<sub>", sub: attn, self_attn, cross_attn).
bool is_attention_array_name(const std::string& name);
// "decoder self-attention", "decoder cross-attention"
std::string attention_family_label(const AttentionMap& m);
// "decoder self-attention, segment 2, layer 1 (keys: 16 memory + 16 segment)"
std::string attention_map_title(const AttentionMap& m);
const char* attention_map_kind_name(AttentionMapKind kind);  // "self", "cross", ...
const char* token_side_name(TokenSide side);                 // "source", "target", "positions"

// Labels of a map's rows and columns from the trace's token lists (positions: "0", "1", ...).
std::vector<std::string> query_labels(const Trace& trace, const AttentionMap& m);
std::vector<std::string> key_labels(const Trace& trace, const AttentionMap& m);

// Descriptions of the arrays of a trace recorded before the catalogue existed (dumps of
// manifest version 1), derived from the naming scheme and the token lists.
std::vector<AttentionMap> derive_attention_maps(const Trace& trace);

}  // namespace atlas
