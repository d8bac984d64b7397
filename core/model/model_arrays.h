#pragma once
// Trace arrays every kind of model may write, named once for the producers (model.cpp,
// forward_pass.cpp, universal.cpp, and the seq2seq, NTM and SNAIL models) and every reader (the
// predictions, lens and positional views, the prefix cache, tests). Attention maps are in
// the attention-map catalogue (core/model/attention_map.h); variants' own arrays are named next
// to their producers (e.g. core/variants/universal/act_arrays.h).
#include <string>

namespace atlas::model_arrays {

inline constexpr const char* kLogits = "logits";          // output logits [L, vocab]
inline constexpr const char* kPositional = "positional";  // position signal added to the input [L, d]
inline constexpr const char* kDecoderPositional = "decoder.positional";  // encoder-decoder targets
// Positions on queries and keys (core/model/qk_positions.h) trace, under the positional array's
// name, what they do instead of an added signal, and beside it the frequency of each dimension
// pair in radians per position [pairs], named after the positional array it belongs to.
inline std::string frequencies_of(const std::string& positional) { return positional + ".frequencies"; }
inline constexpr const char* kPositionalFrequencies =
    "positional.frequencies";  // frequencies_of(kPositional)

}  // namespace atlas::model_arrays
