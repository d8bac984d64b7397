#pragma once
// The trace arrays of Reformer's LSH attention (docs/variants.md, "Reformer"), named once for
// the producer (lsh_attention.cpp) and every reader (the LSH panel, tests). Per LSH attention
// map `attn`: each hash round's buckets and sorted order [heads, L], and the chunk boundaries
// in sorted order [n_chunks + 1].
#include <cstdint>
#include <string>

namespace atlas::lsh_arrays {

inline std::string round_buckets(const std::string& attn, int64_t round) {
  return attn + ".round" + std::to_string(round) + ".buckets";
}
inline std::string round_order(const std::string& attn, int64_t round) {
  return attn + ".round" + std::to_string(round) + ".order";
}
inline std::string chunks(const std::string& attn) { return attn + ".chunks"; }
// Every LSH map has round 0: the suffix that finds them.
inline constexpr const char* kFirstRoundSuffix = ".round0.buckets";

}  // namespace atlas::lsh_arrays
