#pragma once
// Token lists in tests: tokens from ids (labelled by the id), and the ids or labels of a
// tokenizer's output.
#include <cstdint>
#include <string>
#include <vector>

#include "core/model/trace.h"

namespace atlas::test {

inline std::vector<TokenInfo> tokens(const std::vector<int32_t>& ids) {
  std::vector<TokenInfo> t;
  for (int32_t id : ids) t.push_back({id, std::to_string(id)});
  return t;
}

inline std::vector<int32_t> ids_of(const std::vector<TokenInfo>& tokens) {
  std::vector<int32_t> ids;
  for (const TokenInfo& t : tokens) ids.push_back(t.id);
  return ids;
}

inline std::vector<std::string> labels_of(const std::vector<TokenInfo>& tokens) {
  std::vector<std::string> labels;
  for (const TokenInfo& t : tokens) labels.push_back(t.label);
  return labels;
}

}  // namespace atlas::test
