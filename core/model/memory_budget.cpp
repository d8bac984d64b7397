#include "core/model/memory_budget.h"

#include "core/model/attention_on_demand.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/formats/input_file.h"  // format_bytes
#include "core/model/attention_on_demand.h"
#include "core/model/mechanism_module.h"
#include "core/model/memory_limits.h"
#include "core/model/stack_kind_module.h"
#include "core/tensor/allocation_policy.h"
#include "core/tensor/error.h"
#include "core/variants/sparse/sparse_attention.h"  // kMaxTracedIndex

namespace atlas {

namespace {

// Key positions per query of one dense traced attention map of a self-attention layer over L
// positions (0: no dense map; sparse layers' CSR arrays are counted by sparse_trace_bytes): the
// mechanism's (sparse, LSH, Performer: only while small), the stack kind's (XL), else L.
double keys_per_query(const ModelConfig& c, double L) {
  for (const AttentionMechanismModule* m : mechanisms_for(c))  // core/model/mechanism_module.h
    if (m->keys_per_query) return m->keys_per_query(c, L);
  const StackKindModule* kind = stack_kind_module(c);  // XL: its segment and memory
  return kind && kind->keys_per_query ? kind->keys_per_query(c, L) : L;
}

// Bytes one sparse or LSH self-attention layer of L positions traces beyond its dense copy: the
// CSR of the heads' union (row pointers, indices), per head its probabilities and, when the heads'
// patterns differ, their membership flags; nothing when even one head's indices are past what
// float32 arrays hold exactly (trace_sparse_attention then traces no CSR).
double sparse_trace_bytes(const ModelConfig& c, int64_t L, const SparseNonzeros& n, const TraceOptions& t) {
  if (!t.attention || n.largest_head >= double(kMaxTracedIndex)) return 0.0;
  const double per_nonzero = 1.0 + double(c.n_heads) * (n.heads_differ ? 2.0 : 1.0);
  return 4.0 * (double(L) + 1 + per_nonzero * n.union_bound);
}

// Bytes per traced query-key cell of one layer: probabilities and scores per head, one mask.
double traced_bytes_per_cell(const ModelConfig& c, const TraceOptions& t) {
  const double heads = double(c.n_heads);
  return 4.0 * ((t.attention ? heads : 0) + (t.scores ? heads : 0) + (t.masks ? 1 : 0));
}

uint64_t parse_budget(const char* text) {
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  double scale = 1;
  if (end && *end) {
    switch (*end) {
      case 'k': case 'K': scale = 1024.0; break;
      case 'm': case 'M': scale = 1024.0 * 1024; break;
      case 'g': case 'G': scale = 1024.0 * 1024 * 1024; break;
      default: throw AtlasError(std::string("ATLAS_MEMORY_BUDGET=\"") + text +
                                "\": use bytes or a K, M or G suffix, e.g. 8G");
    }
  }
  if (!(v > 0) || !std::isfinite(v * scale) || v * scale > 1e18)
    throw AtlasError(std::string("ATLAS_MEMORY_BUDGET=\"") + text + "\" is not a positive size");
  return static_cast<uint64_t>(v * scale);
}

}  // namespace

std::string untraced_sparse_maps_reason(const ModelConfig& c, int64_t source_len) {
  if (source_len < 1) return "";
  for (const AttentionMechanismModule* m : mechanisms_for(c))  // a sparse pattern's CSR limit
    if (m->untraced_maps_reason) return m->untraced_maps_reason(c, source_len);
  return "";
}

RunMemoryEstimate estimate_run_memory(const ModelConfig& c, int64_t source_len,
                                      int64_t target_len, const TraceOptions& t) {
  RunMemoryEstimate e;
  const double S = double(source_len), T = double(target_len), d = double(c.d_model);
  const double heads = double(c.n_heads), dh = double(c.d_head()), ff = double(c.d_ff);
  // The stack kind's traced depth (Universal Transformers trace every ponder step of their one
  // shared layer).
  const double enc_layers = double(traced_encoder_layers(c));
  const double dec_layers = double(traced_decoder_layers(c));
  const double per_cell = traced_bytes_per_cell(c, t);
  double cells = 0, largest = 0, positions = 0;
  auto add_layers = [&](double layers, double queries, double keys) {
    cells += layers * queries * keys;
    largest = std::max(largest, queries * keys);
  };
  // Sparse and LSH layers: their CSR arrays, and the probabilities of the layer in flight.
  const AttentionMechanismModule* sparse = sparse_trace_mechanism(c);  // sparse patterns, LSH
  const SparseNonzeros nnz_source = sparse ? sparse->sparse_nonzeros(c, source_len) : SparseNonzeros{};
  const SparseNonzeros nnz_target =
      sparse && target_len > 0 ? sparse->sparse_nonzeros(c, target_len) : SparseNonzeros{};
  double csr = 0;
  if (c.architecture == Architecture::EncoderDecoder) {
    add_layers(enc_layers, S, keys_per_query(c, S));
    add_layers(dec_layers, T, keys_per_query(c, T));  // decoder self-attention
    add_layers(dec_layers, T, S);                     // cross-attention
    if (sparse)
      csr = enc_layers * sparse_trace_bytes(c, source_len, nnz_source, t) +
            dec_layers * sparse_trace_bytes(c, target_len, nnz_target, t);
    positions = S * enc_layers + T * dec_layers;
  } else {
    const double layers = c.has_encoder() ? enc_layers : dec_layers;
    add_layers(layers, S, keys_per_query(c, S));
    if (sparse) csr = layers * sparse_trace_bytes(c, source_len, nnz_source, t);
    positions = S * layers;
  }
  largest = std::max({largest, nnz_source.union_bound, nnz_target.union_bound});
  if (maps_on_demand(c, t, source_len, target_len)) {
    // Queries and keys per layer instead of the maps (attention_on_demand.h); while a layer
    // runs, each head in flight holds two blocks of rows over every key.
    e.attention_maps = 2.0 * 4.0 * heads * dh * positions;
    e.working = 4.0 * heads * 2.0 * 64.0 * std::max(S, T);
  } else {
    // TraceOptions::only_maps: each selected map holds at most the largest layer's cells.
    const double dense = t.only_maps.empty() ? cells : std::min(cells, double(t.only_maps.size()) * largest);
    e.attention_maps = dense * per_cell + csr + (t.qk ? 2.0 * 4.0 * heads * dh * positions : 0.0);
    e.working = 2.0 * 4.0 * heads * largest;  // scores and probabilities of the layer in flight
  }
  const double L = std::max(S, T);
  const double hidden_traced = t.hidden || t.logit_lens > 0 ? 4.0 * d * positions : 0.0;
  const double logits = c.output != OutputHead::None ? 4.0 * L * double(c.vocab_size) : 0.0;
  e.activations = hidden_traced + 4.0 * L * (ff + 6.0 * d) + logits;
  return e;
}

MemoryRoom available_memory() {
  if (const char* budget = std::getenv("ATLAS_MEMORY_BUDGET"); budget && *budget)
    return {parse_budget(budget), std::string("ATLAS_MEMORY_BUDGET=") + budget};
  MemoryRoom room = memory_room();
  // Freed heap this process keeps (a cgroup counts it as used, MemAvailable as taken): a new
  // run reuses it first, so a run after a large one is not refused for memory already held.
  if (room.bytes > 0) room.bytes += freed_memory_held();
  return room;
}

uint64_t available_memory_bytes() { return available_memory().bytes; }

namespace {

// What the guard compares with, said as it compares: a refusal of 196 MB beside "200 MB is
// available" reads as a bug unless the message says that only 90% of it may be used.
std::string room_text(const MemoryRoom& room) {
  return "about " + format_bytes(room.bytes) + " is available (" + room.limit + "), of which " +
         std::to_string(int(kMemoryShare * 100)) + "% (" +
         format_bytes(static_cast<uint64_t>(kMemoryShare * double(room.bytes))) + ") may be used";
}

}  // namespace

void check_run_memory(const ModelConfig& c, int64_t source_len, int64_t target_len,
                      const TraceOptions& t) {
  const MemoryRoom room = available_memory();
  const uint64_t available = room.bytes;
  if (available == 0) return;  // unknown (no /proc): nothing to compare with
  const double allowed = kMemoryShare * double(available);
  const RunMemoryEstimate e = estimate_run_memory(c, source_len, target_len, t);
  if (e.total() <= allowed) return;
  // The longest input (same source/target ratio) that fits: the estimate grows with length.
  const double ratio = source_len > 0 ? double(target_len) / double(source_len) : 0.0;
  int64_t lo = 0, hi = std::max(source_len, int64_t(1));
  while (lo + 1 < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    const auto tgt = static_cast<int64_t>(std::ceil(ratio * double(mid)));
    if (estimate_run_memory(c, mid, tgt, t).total() <= allowed) lo = mid;
    else hi = mid;
  }
  auto bytes = [](double b) { return format_bytes(static_cast<uint64_t>(std::min(b, 1.8e19))); };
  std::string message = "this run needs about " + bytes(e.total()) + " of memory (attention maps " +
                        bytes(e.attention_maps) + ", activations and logits " +
                        bytes(e.activations + e.working) + ") but " + room_text(room);
  message += lo > 0 ? "; an input of at most " + std::to_string(lo) + " tokens fits"
                    : "; even one token does not fit";
  if (t.scores) message += ", and tracing without --scores halves the maps";
  if (e.attention_maps > 0.5 * e.total() && on_demand_maps_apply(c) && !maps_on_demand(c, t, source_len, target_len))
    message += "; computing the maps on request (--maps on-demand) stores queries and keys instead";
  throw AtlasError(message + " (the limit can be set with ATLAS_MEMORY_BUDGET)");
}

void check_weights_memory(double held, const std::string& origin, const std::string& detail,
                          const std::string& advice) {
  const MemoryRoom room = available_memory();
  if (room.bytes == 0 || held <= kMemoryShare * double(room.bytes)) return;
  throw AtlasError(origin + ": the model's weights need about " +
                   format_bytes(static_cast<uint64_t>(std::min(held, 1.8e19))) + " (" + detail +
                   ") but " + room_text(room) + "; nothing was loaded. " + advice +
                   " (the limit can be set with ATLAS_MEMORY_BUDGET)");
}

}  // namespace atlas
