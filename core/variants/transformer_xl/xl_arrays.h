#pragma once
// The trace arrays of Transformer-XL besides its attention maps (which are in the catalogue,
// AttentionMap::segment), named once for the producer (transformer_xl.cpp) and every reader
// (the XL panel, tests): the segment each key of segment `seg` came from [Lk], and the four
// score terms of a layer, each [heads, Lq, Lk] (traced with scores).
#include <cstdint>
#include <string>

namespace atlas::xl_arrays {

inline std::string key_segment(int64_t seg) { return "xl.seg" + std::to_string(seg) + ".key_segment"; }
// term: 'a' content, 'b' content-position, 'c' global content bias, 'd' global position bias.
inline std::string term(int64_t seg, int64_t layer, char which) {
  return "xl.seg" + std::to_string(seg) + ".layer" + std::to_string(layer) + ".terms." + which;
}

}  // namespace atlas::xl_arrays
