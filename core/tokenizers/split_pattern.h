#pragma once
// The regex dialect in which llama.cpp writes the split rules of its byte-level BPE
// pre-tokenizers (llama-vocab.cpp, llm_tokenizer_bpe; run by unicode.cpp's
// unicode_regex_split), matched by a small backtracking engine so a GGUF file's rule can be
// stated as llama.cpp's own pattern strings rather than re-derived by hand.
//
// What llama.cpp does, and so what this does:
//   - The patterns of a rule run in turn; each splits every piece the previous one left, and
//     the text between two matches (or before the first, after the last) is a piece too.
//   - A pattern runs as ECMAScript std::regex: leftmost match, alternatives in order, greedy
//     quantifiers backtracking, atomic lookahead; `$` is the end of the piece.
//   - A pattern naming a category \p{L} \p{N} \p{P} (\p{Lu} .. \p{Lo} all mean \p{L}) runs on the
//     "collapsed" text: ASCII stays itself, other whitespace becomes \v, any other character
//     becomes one byte standing for its category. So \p{L} there is A-Za-z plus every non-ASCII
//     letter, and a literal range in the pattern only ever meets ASCII.
//   - Any other pattern runs on the code points, non-ASCII whitespace again read as \v.
//   - \s is ASCII whitespace (C locale), \d is 0-9, \w is [0-9A-Za-z_].
// Not implemented (the pattern is refused when built): \p{M} and \p{S} (Atlas's category
// tables lack Mc, Me and S), lazy quantifiers, backreferences, `.`, a group wider than one
// character under any quantifier but `?`, and patterns that can match the empty string
// (llama.cpp then emits empty pieces).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace atlas {

class SplitPattern {
 public:
  // Throws AtlasError quoting the pattern and naming the construct it cannot run.
  explicit SplitPattern(std::string_view pattern);

  // True when the pattern names a \p{..} category, so it runs on the collapsed text.
  bool collapsed() const { return m_collapsed; }

  // The end of the match that starts exactly at `at` in units[begin, end) (the piece being
  // split), or npos when the pattern does not match there.
  size_t match_at(const std::u32string& units, size_t begin, size_t end, size_t at) const;

  // A parsed pattern element. Set: one unit in `ranges` or one of the `classes` (negated by
  // `negated`); Seq/Alt: `children` in order; Look: (?=..) or, negated, (?!..) of children[0];
  // Assert: `anchor` '$', '^', 'b' (\b) or 'B'; Repeat: children[0] min..max times (max -1:
  // unbounded). `single`: exactly one unit wide with no choice inside (a set, or lookaheads
  // over single elements before one), so a repeat of it can count instead of recurse.
  struct Node {
    enum Kind : uint8_t { Set, Seq, Alt, Look, Assert, Repeat } kind = Set;
    explicit Node(Kind k) : kind(k) {}
    bool negated = false;
    bool single = false;
    char anchor = 0;
    uint16_t classes = 0;
    int min = 0, max = 0;
    std::vector<std::pair<char32_t, char32_t>> ranges;
    std::vector<int> children;
  };

 private:
  struct Context;
  class Parser;
  struct Next;
  bool match(const Context& c, int node, size_t pos, const Next& next) const;
  bool match_seq(const Context& c, int node, size_t item, size_t pos, const Next& next) const;
  bool test_one(const Context& c, int node, size_t pos) const;

  std::vector<Node> m_nodes;
  int m_root = -1;
  bool m_collapsed = false;
};

// The units a pattern reads for each code point: llama.cpp's collapsed text when `collapsed`,
// else the code points with non-ASCII whitespace as \v.
std::u32string split_units(const std::u32string& code_points, bool collapsed);

// The [begin, end) byte ranges of the pieces, which tile `text`, after every pattern has run
// in turn. An invalid UTF-8 byte reads as U+FFFD, as in llama.cpp.
std::vector<std::pair<size_t, size_t>> split_by_patterns(std::string_view text,
                                                         const std::vector<SplitPattern>& patterns);

}  // namespace atlas
