#pragma once
// Per-layer predictions, the "logit lens" (seed 000's auxiliary losses: every intermediate
// layer of a deep character model is asked to predict the next token): each layer's hidden
// state is passed through the stack's final norm (pre-norm models) and the output head.
#include <cstdint>
#include <string>

#include "core/model/model.h"

namespace atlas {

// Needs the run traced with TraceOptions::hidden and a model with an output head. Adds
//   <stack>.logit_lens.ids   [layers, L, top_k] int32   token ids, most probable first
//   <stack>.logit_lens.probs [layers, L, top_k] float32 their softmax probabilities
// for the stack that feeds the output (the decoder, or the encoder of an encoder-only model).
// For a Universal Transformer the rows are the steps run (state after step n, final norm of
// pre-norm models applied; with ACT the model's output is the weighted y, not the last step).
void add_logit_lens(const Model& model, RunResult& result, int64_t top_k);

// The arrays' names, for add_logit_lens and its readers (the lens panel).
inline constexpr const char* kLogitLensIdsSuffix = ".logit_lens.ids";
inline std::string logit_lens_ids(const std::string& stack) { return stack + kLogitLensIdsSuffix; }
inline std::string logit_lens_probs(const std::string& stack) { return stack + ".logit_lens.probs"; }

}  // namespace atlas
