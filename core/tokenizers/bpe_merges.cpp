#include "core/tokenizers/bpe_merges.h"

#include <queue>

#include "core/tensor/error.h"
#include "core/tokenizers/utf8.h"

namespace atlas {

namespace {
std::string message_quote(std::string_view s) {  // for messages: valid UTF-8 only
  return "\"" + (utf8::is_valid(s) ? std::string(s) : std::string("?")) + "\"";
}
}  // namespace

BpeMerges::BpeMerges(const std::vector<std::string>& rules,
                     const std::function<int32_t(std::string_view)>& id_of,
                     const std::string& origin) {
  m_rules.reserve(rules.size());
  std::string merged;
  for (size_t r = 0; r < rules.size(); ++r) {
    const std::string& rule = rules[r];
    const auto fail = [&](const std::string& problem) {
      throw AtlasError(origin + "merge rule " + std::to_string(r) + " " + message_quote(rule) + " " + problem);
    };
    const size_t space = rule.find(' ');
    if (space == std::string::npos || space == 0 || space + 1 == rule.size() ||
        rule.find(' ', space + 1) != std::string::npos)
      fail("is not two symbols separated by one space");
    const std::string_view left(rule.data(), space);
    const std::string_view right(rule.data() + space + 1, rule.size() - space - 1);
    merged.assign(left).append(right);
    const int32_t l = id_of(left), rt = id_of(right), m = id_of(merged);
    if (l < 0) fail("uses " + message_quote(left) + ", which is not in the vocab");
    if (rt < 0) fail("uses " + message_quote(right) + ", which is not in the vocab");
    if (m < 0) fail("makes " + message_quote(merged) + ", which is not in the vocab");
    m_rules[key(l, rt)] = Rule{static_cast<int32_t>(r), m};
  }
}

void BpeMerges::apply(std::vector<Symbol>& symbols) const {
  const int32_t n = static_cast<int32_t>(symbols.size());
  if (n < 2 || m_rules.empty()) return;
  std::vector<int32_t> prev(n), next(n);  // a linked list over positions; -1 = none
  std::vector<bool> alive(n, true);
  for (int32_t i = 0; i < n; ++i) {
    prev[i] = i - 1;
    next[i] = i + 1 < n ? i + 1 : -1;
  }
  struct Candidate {
    int32_t rank, pos, right, left_id, right_id;  // the pair (symbol at pos, symbol at right)
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  const auto push = [&](int32_t pos) {
    const int32_t right = next[pos];
    if (right < 0) return;
    const auto it = m_rules.find(key(symbols[pos].id, symbols[right].id));
    if (it != m_rules.end()) heap.push({it->second.rank, pos, right, symbols[pos].id, symbols[right].id});
  };
  for (int32_t i = 0; i + 1 < n; ++i) push(i);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    // Stale when either symbol has changed since the pair was pushed.
    if (!alive[c.pos] || next[c.pos] != c.right || symbols[c.pos].id != c.left_id ||
        symbols[c.right].id != c.right_id)
      continue;
    symbols[c.pos].id = m_rules.find(key(c.left_id, c.right_id))->second.merged_id;
    symbols[c.pos].bytes += symbols[c.right].bytes;
    alive[c.right] = false;
    next[c.pos] = next[c.right];
    if (next[c.right] >= 0) prev[next[c.right]] = c.pos;
    if (prev[c.pos] >= 0) push(prev[c.pos]);
    push(c.pos);
  }
  std::vector<Symbol> merged;
  for (int32_t i = 0; i >= 0; i = next[i]) merged.push_back(symbols[i]);
  symbols = std::move(merged);
}

}  // namespace atlas
