#pragma once
// The merge rules of a BPE vocabulary and the merge loop, shared by GPT-2's tokenizer
// (bpe_tokenizer.h) and the tokenizer.json ones (hf_bpe_tokenizer.h): repeatedly merge the
// adjacent pair of symbols whose rule has the lowest rank, leftmost first (encoder.py's loop and
// the `tokenizers` library's Word::merge_all give the same result). A heap of candidate pairs
// makes it O(n log n), so a long run of one character stays fast.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace atlas {

class BpeMerges {
 public:
  struct Symbol {  // one token of a piece being merged
    int32_t id;
    uint32_t bytes;  // how many bytes of the piece it covers
  };

  BpeMerges() = default;
  // `rules`: "left right" by rank (a repeated rule keeps its last rank, as encoder.py's dict
  // and tokenizer.json's map do); `id_of`: a symbol's id, or -1 when the vocab lacks it.
  // Throws AtlasError starting with `origin` and naming the rule at fault.
  BpeMerges(const std::vector<std::string>& rules,
            const std::function<int32_t(std::string_view)>& id_of, const std::string& origin);

  bool empty() const { return m_rules.empty(); }
  // Merges `symbols` in place.
  void apply(std::vector<Symbol>& symbols) const;

 private:
  struct Rule {
    int32_t rank;
    int32_t merged_id;
  };
  static uint64_t key(int32_t left, int32_t right) {
    return (uint64_t(uint32_t(left)) << 32) | uint32_t(right);
  }
  std::unordered_map<uint64_t, Rule> m_rules;  // (left id, right id) -> rule
};

}  // namespace atlas
