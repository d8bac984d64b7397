#pragma once
// Next-token predictions and decoding for models with an output head (GPT-2 top-k
// and generation). Generation reruns the forward on the whole sequence for every new token
// (no KV cache: simple, and exact), then once more with the caller's trace options, so the
// trace's attention covers the prompt and every generated token.
#include <cstdint>
#include <string>
#include <vector>

#include "core/model/model.h"

namespace atlas {

struct Prediction {
  int32_t id = 0;
  std::string label;   // the tokenizer's readable label
  double probability;  // softmax of the logits row
};

// The k most likely next tokens after row `position` of logits [L, vocab], best first.
std::vector<Prediction> top_k(const Model& model, const Tensor& logits, int64_t position, int64_t k);

struct GenerateOptions {
  int64_t new_tokens = 10;
  bool greedy = true;        // argmax; otherwise sample from softmax(logits / temperature)
  double temperature = 1.0;  // > 0
  uint64_t seed = 0;         // sampling stream (core/tensor/random.h)
  int32_t stop_id = -1;      // stop after generating this id (e.g. <|endoftext|>); -1 = never
};

struct GenerateResult {
  std::vector<TokenInfo> prompt, generated;
  std::string text;  // prompt + generated tokens decoded (byte-level BPE bytes restored)
  RunResult run;     // forward over prompt + generated with the caller's RunOptions
};

// Decoder-only models with an output head only; throws AtlasError otherwise, or when the
// sequence would exceed max_positions (the message says how many tokens fit).
GenerateResult generate(const Model& model, const std::string& prompt,
                        const GenerateOptions& options, const RunOptions& run_options);

// Text of token ids: GPT-2 byte-level BPE tokens are mapped back to their bytes (invalid UTF-8
// from a token cut inside a character is replaced by U+FFFD); other tokenizers join labels.
std::string decode_tokens(const Model& model, const std::vector<TokenInfo>& tokens);

}  // namespace atlas
