#pragma once
// Per-head numbers of attention maps laid out as one [layers, heads] table per map family
// (stack, sub-layer and Transformer-XL segment; a Universal Transformer's step n at row n - 1),
// in catalogue order: the grids of the compare and token-search views.
#include <cstdint>
#include <string>
#include <vector>

#include "core/model/attention_map.h"

namespace atlas {

struct HeadTable {
  std::string name;  // "decoder.self_attn", "decoder.self_attn.seg1"
  AttentionMap map;  // one map of the family
  bool steps = false;
  int64_t layers = 0, heads = 0;
  std::vector<double> values;  // [layers * heads], `fill` where no map or head has a value
};

struct HeadValue {
  const AttentionMap* map;
  int64_t head;
  double value;
};

std::vector<HeadTable> head_tables(const std::vector<HeadValue>& values, double fill = 0.0);

}  // namespace atlas
