// A backtracking matcher for llama.cpp's split patterns (see split_pattern.h for the dialect).
// Matching is continuation passing: each element calls `next` with every end it can reach, in
// the order ECMAScript prefers, and the first `next` that returns true wins.
#include "core/tokenizers/split_pattern.h"

#include <algorithm>

#include "core/tensor/error.h"
#include "core/tokenizers/unicode_categories.h"
#include "core/tokenizers/utf8.h"

namespace atlas {
namespace {

// Set::classes bits.
enum : uint16_t {
  kSpace = 1, kNotSpace = 2, kDigit = 4, kNotDigit = 8, kWord = 16, kNotWord = 32,
  kLetter = 64, kNumber = 128, kPunct = 256
};

// The bytes llama.cpp's collapsed text uses for a non-ASCII character of each category; a
// character of any other category (marks and symbols included) is never named by an accepted
// pattern, so one byte stands for all of them.
constexpr char32_t kCollapsedOther = 0xD0, kCollapsedNumber = 0xD1, kCollapsedLetter = 0xD2,
                   kCollapsedPunct = 0xD3, kCollapsedSpace = 0x0B;

bool ascii_space(char32_t u) { return u == ' ' || (u >= 0x09 && u <= 0x0D); }
bool ascii_digit(char32_t u) { return u >= '0' && u <= '9'; }
bool ascii_letter(char32_t u) { return (u >= 'A' && u <= 'Z') || (u >= 'a' && u <= 'z'); }
bool word_unit(char32_t u) { return ascii_letter(u) || ascii_digit(u) || u == '_'; }
// The ASCII part of llama.cpp's \p{P}: !"# %&'()* ,-./ :; ?@ [\] _ { }
bool ascii_punct(char32_t u) {
  return (u >= 0x21 && u <= 0x23) || (u >= 0x25 && u <= 0x2A) || (u >= 0x2C && u <= 0x2F) ||
         u == 0x3A || u == 0x3B || u == 0x3F || u == 0x40 || (u >= 0x5B && u <= 0x5D) ||
         u == 0x5F || u == 0x7B || u == 0x7D;
}

bool in_classes(uint16_t classes, char32_t u) {
  return ((classes & kSpace) && ascii_space(u)) || ((classes & kNotSpace) && !ascii_space(u)) ||
         ((classes & kDigit) && ascii_digit(u)) || ((classes & kNotDigit) && !ascii_digit(u)) ||
         ((classes & kWord) && word_unit(u)) || ((classes & kNotWord) && !word_unit(u)) ||
         ((classes & kLetter) && (u == kCollapsedLetter || ascii_letter(u))) ||
         ((classes & kNumber) && (u == kCollapsedNumber || ascii_digit(u))) ||
         ((classes & kPunct) && (u == kCollapsedPunct || ascii_punct(u)));
}

}  // namespace

struct SplitPattern::Context {
  const char32_t* units;
  size_t begin, end;
  bool word_at(size_t pos) const { return pos >= begin && pos < end && word_unit(units[pos]); }
};

// A borrowed callable bool(size_t): the rest of the match after an element.
struct SplitPattern::Next {
  template <class F>
  Next(const F& f)  // NOLINT(google-explicit-constructor): lambdas pass straight in
      : object(&f), call([](const void* o, size_t p) { return (*static_cast<const F*>(o))(p); }) {}
  bool operator()(size_t pos) const { return call(object, pos); }
  const void* object;
  bool (*call)(const void*, size_t);
};

class SplitPattern::Parser {
 public:
  Parser(std::string_view pattern, std::vector<Node>& nodes, bool& collapsed)
      : m_text(pattern), m_nodes(nodes), m_collapsed(collapsed) {
    for (size_t at = 0; at < pattern.size();) {
      const utf8::Decoded d = utf8::decode(pattern, at);
      if (d.length == 0) fail("is not valid UTF-8");
      m_cps.push_back(d.code_point);
      at += d.length;
    }
  }

  int parse() {
    const int root = alternation();
    if (m_at != m_cps.size()) fail("has an unmatched ')'");
    if (nullable(root)) fail("can match the empty string");
    // llama.cpp refuses these too: its collapsed text has no non-ASCII characters left.
    if (m_collapsed)
      for (const char32_t c : m_cps)
        if (c >= 0x80) fail("mixes \\p{..} categories with non-ASCII characters");
    return root;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw AtlasError("split pattern \"" + std::string(m_text) + "\" " + why);
  }
  bool at_end() const { return m_at >= m_cps.size(); }
  char32_t peek(size_t ahead = 0) const {
    return m_at + ahead < m_cps.size() ? m_cps[m_at + ahead] : 0;
  }
  char32_t take() {
    if (at_end()) fail("ends too early");
    return m_cps[m_at++];
  }
  int add(Node n) {
    m_nodes.push_back(std::move(n));
    return int(m_nodes.size()) - 1;
  }

  int alternation() {
    std::vector<int> branches{sequence()};
    while (!at_end() && peek() == '|') {
      ++m_at;
      branches.push_back(sequence());
    }
    if (branches.size() == 1) return branches[0];
    Node alt(Node::Alt);
    alt.children = branches;
    alt.single = true;
    for (const int b : branches) alt.single = alt.single && m_nodes[size_t(b)].single;
    return add(std::move(alt));
  }

  int sequence() {
    std::vector<int> items;
    while (!at_end() && peek() != '|' && peek() != ')') items.push_back(quantified(atom()));
    if (items.size() == 1) return items[0];
    // One unit wide with no choice: lookaheads over single elements, then one single element.
    bool single = !items.empty();
    for (size_t i = 0; i < items.size(); ++i) {
      const Node& n = m_nodes[size_t(items[i])];
      const bool last = i + 1 == items.size();
      single = single && (last ? n.single && n.kind != Node::Look
                               : n.kind == Node::Look && m_nodes[size_t(n.children[0])].single);
    }
    Node seq(Node::Seq);
    seq.children = items;
    seq.single = single;
    return add(std::move(seq));
  }

  int atom() {
    const char32_t c = take();
    switch (c) {
      case '(': {
        bool look = false, negated = false;
        if (peek() == '?') {
          const char32_t kind = peek(1);
          if (kind != ':' && kind != '=' && kind != '!')
            fail("uses the group kind (?" + utf8::encode(kind) + ", which is not supported");
          look = kind != ':';
          negated = kind == '!';
          m_at += 2;
        }
        const int inner = alternation();
        if (at_end() || take() != ')') fail("has an unclosed '('");
        if (!look) return inner;
        Node n(Node::Look);
        n.negated = negated;
        n.children = {inner};
        return add(std::move(n));
      }
      case '[': return char_class();
      case '\\': return escape();
      case '^': case '$': return anchor(c);
      case '.': fail("uses '.', which is not supported");
      case '*': case '+': case '?': case '{': case ')': case '|': case ']':
        fail("has '" + utf8::encode(c) + "' where a character or group belongs");
      default: return literal(c);
    }
  }

  int anchor(char32_t c) {
    Node n(Node::Assert);
    n.anchor = char(c);
    return add(std::move(n));
  }

  int literal(char32_t c) {
    Node n(Node::Set);
    n.ranges = {{c, c}};
    n.single = true;
    return add(std::move(n));
  }

  // \p{..} inside or outside a class: the class bit it sets.
  uint16_t category() {
    if (take() != '{') fail("has \\p without {..}");
    std::string name;
    for (char32_t c = take(); c != '}'; c = take()) name += char(c);
    m_collapsed = true;
    if (name == "L" || name == "Lu" || name == "Ll" || name == "Lt" || name == "Lm" || name == "Lo")
      return kLetter;  // llama.cpp reads every letter subcategory as \p{L}
    if (name == "N") return kNumber;
    if (name == "P") return kPunct;
    fail("uses \\p{" + name + "}, a category Atlas's Unicode tables do not hold");
  }

  // An escape: sets `classes` for \s \S \d \D \w \W \p, else returns the character it names.
  char32_t escaped(uint16_t& classes, bool in_class) {
    const char32_t c = take();
    switch (c) {
      case 's': classes |= kSpace; return 0;
      case 'S': classes |= kNotSpace; return 0;
      case 'd': classes |= kDigit; return 0;
      case 'D': classes |= kNotDigit; return 0;
      case 'w': classes |= kWord; return 0;
      case 'W': classes |= kNotWord; return 0;
      case 'p': classes |= category(); return 0;
      case 'r': return '\r';
      case 'n': return '\n';
      case 't': return '\t';
      case 'f': return '\f';
      case 'v': return '\v';
      case 'b': if (in_class) return '\b'; break;
      default: break;
    }
    if ((c >= '0' && c <= '9') || ascii_letter(c))
      fail("uses the escape \\" + utf8::encode(c) + ", which is not supported");
    return c;  // an escaped punctuation character is itself
  }

  int escape() {
    const char32_t c = peek();
    if (c == 'b' || c == 'B') {
      ++m_at;
      return anchor(c);
    }
    uint16_t classes = 0;
    const char32_t ch = escaped(classes, false);
    if (classes == 0) return literal(ch);
    Node n(Node::Set);
    n.classes = classes;
    n.single = true;
    return add(std::move(n));
  }

  int char_class() {
    Node n(Node::Set);
    n.single = true;
    if (peek() == '^') {
      n.negated = true;
      ++m_at;
    }
    // One class member: a character (returned) or a class escape (added to n.classes).
    const auto member = [&](bool& is_char) -> char32_t {
      const char32_t c = take();
      if (c != '\\') {
        is_char = true;
        return c;
      }
      uint16_t classes = 0;
      const char32_t ch = escaped(classes, true);
      n.classes |= classes;
      is_char = classes == 0;
      return ch;
    };
    while (peek() != ']') {
      if (at_end()) fail("has an unclosed '['");
      bool is_char = false;
      const char32_t lo = member(is_char);
      if (!is_char) continue;
      if (peek() == '-' && peek(1) != ']' && m_at + 1 < m_cps.size()) {
        ++m_at;
        bool hi_char = false;
        const char32_t hi = member(hi_char);
        if (!hi_char || hi < lo) fail("has a bad range in a [..] class");
        n.ranges.emplace_back(lo, hi);
      } else {
        n.ranges.emplace_back(lo, lo);
      }
    }
    ++m_at;  // ']'
    return add(std::move(n));
  }

  int quantified(int item) {
    if (at_end()) return item;
    int min = 0, max = 0;
    const char32_t c = peek();
    if (c == '?') {
      min = 0, max = 1;
    } else if (c == '*') {
      min = 0, max = -1;
    } else if (c == '+') {
      min = 1, max = -1;
    } else if (c == '{') {
      size_t at = m_at + 1;
      const auto number = [&]() {
        int v = 0;
        bool any = false;
        while (at < m_cps.size() && m_cps[at] >= '0' && m_cps[at] <= '9') {
          v = v * 10 + int(m_cps[at++] - '0');
          any = true;
        }
        if (!any) fail("has a '{' that is not a {n,m} count");
        return v;
      };
      min = max = number();
      if (at < m_cps.size() && m_cps[at] == ',') {
        ++at;
        max = (at < m_cps.size() && m_cps[at] == '}') ? -1 : number();
      }
      if (at >= m_cps.size() || m_cps[at] != '}' || (max >= 0 && max < min))
        fail("has a bad {n,m} count");
      m_at = at;
    } else {
      return item;
    }
    ++m_at;
    if (peek() == '?' || peek() == '+') fail("uses a lazy or possessive quantifier");
    // A wider group may only be optional: its repeats would recurse once per repetition.
    if (!m_nodes[size_t(item)].single && !(min == 0 && max == 1))
      fail("repeats a group that is not exactly one character wide");
    Node n(Node::Repeat);
    n.min = min, n.max = max;
    n.children = {item};
    return add(std::move(n));
  }

  bool nullable(int id) const {
    const Node& n = m_nodes[size_t(id)];
    switch (n.kind) {
      case Node::Set: return false;
      case Node::Seq:
        for (const int c : n.children)
          if (!nullable(c)) return false;
        return true;
      case Node::Alt:
        for (const int c : n.children)
          if (nullable(c)) return true;
        return false;
      case Node::Repeat: return n.min == 0 || nullable(n.children[0]);
      case Node::Look: case Node::Assert: return true;
    }
    return true;
  }

  std::string_view m_text;
  std::vector<char32_t> m_cps;
  size_t m_at = 0;
  std::vector<Node>& m_nodes;
  bool& m_collapsed;
};

SplitPattern::SplitPattern(std::string_view pattern) {
  m_root = Parser(pattern, m_nodes, m_collapsed).parse();
}

// Whether the single-unit element `node` matches the unit at `pos`.
bool SplitPattern::test_one(const Context& c, int node, size_t pos) const {
  const Node& n = m_nodes[size_t(node)];
  switch (n.kind) {
    case Node::Set: {
      if (pos >= c.end) return false;
      const char32_t u = c.units[pos];
      bool hit = false;
      for (const auto& [lo, hi] : n.ranges) hit = hit || (u >= lo && u <= hi);
      hit = hit || in_classes(n.classes, u);
      return hit != n.negated;
    }
    case Node::Alt:
      for (const int b : n.children)
        if (test_one(c, b, pos)) return true;
      return false;
    case Node::Seq:
      for (size_t i = 0; i + 1 < n.children.size(); ++i) {
        const Node& look = m_nodes[size_t(n.children[i])];
        if (test_one(c, look.children[0], pos) == look.negated) return false;
      }
      return test_one(c, n.children.back(), pos);
    default: return false;
  }
}

bool SplitPattern::match_seq(const Context& c, int node, size_t item, size_t pos,
                             const Next& next) const {
  const Node& n = m_nodes[size_t(node)];
  if (item == n.children.size()) return next(pos);
  return match(c, n.children[item], pos,
               [&](size_t p) { return match_seq(c, node, item + 1, p, next); });
}

bool SplitPattern::match(const Context& c, int node, size_t pos, const Next& next) const {
  const Node& n = m_nodes[size_t(node)];
  if (n.single) return test_one(c, node, pos) && next(pos + 1);
  switch (n.kind) {
    case Node::Seq: return match_seq(c, node, 0, pos, next);
    case Node::Alt:
      for (const int b : n.children)
        if (match(c, b, pos, next)) return true;
      return false;
    case Node::Look: {
      // Atomic, as in ECMAScript: the first way the body matches decides.
      const bool found = match(c, n.children[0], pos, [](size_t) { return true; });
      return found != n.negated && next(pos);
    }
    case Node::Assert: {
      bool ok = false;
      if (n.anchor == '$') ok = pos == c.end;
      if (n.anchor == '^') ok = pos == c.begin;
      if (n.anchor == 'b' || n.anchor == 'B')
        ok = (c.word_at(pos - 1) != c.word_at(pos)) == (n.anchor == 'b');
      return ok && next(pos);
    }
    case Node::Repeat: {
      if (!m_nodes[size_t(n.children[0])].single)  // (..)? of a wider group: greedy, once
        return match(c, n.children[0], pos, next) || next(pos);
      // The body is one unit wide with no choice inside: count the run, then give back greedily.
      size_t run = 0;
      const size_t cap = n.max < 0 ? c.end - pos : std::min(c.end - pos, size_t(n.max));
      while (run < cap && test_one(c, n.children[0], pos + run)) ++run;
      for (size_t k = run + 1; k-- > size_t(n.min);)
        if (next(pos + k)) return true;
      return false;
    }
    case Node::Set: return false;  // always single
  }
  return false;
}

size_t SplitPattern::match_at(const std::u32string& units, size_t begin, size_t end,
                              size_t at) const {
  const Context c{units.data(), begin, end};
  size_t found = std::u32string::npos;
  match(c, m_root, at, [&](size_t p) {
    found = p;
    return true;
  });
  return found;
}

std::u32string split_units(const std::u32string& code_points, bool collapsed) {
  std::u32string units(code_points.size(), 0);
  for (size_t i = 0; i < code_points.size(); ++i) {
    const char32_t cp = code_points[i];
    if (cp < 0x80) {
      units[i] = cp;
    } else if (utf8::is_whitespace(cp)) {
      units[i] = kCollapsedSpace;
    } else if (!collapsed) {
      units[i] = cp;
    } else if (unicode::is_letter(cp)) {
      units[i] = kCollapsedLetter;
    } else if (unicode::is_number(cp)) {
      units[i] = kCollapsedNumber;
    } else if (unicode::is_punctuation(cp)) {
      units[i] = kCollapsedPunct;
    } else {
      units[i] = kCollapsedOther;
    }
  }
  return units;
}

std::vector<std::pair<size_t, size_t>> split_by_patterns(std::string_view text,
                                                         const std::vector<SplitPattern>& patterns) {
  std::u32string cps;
  std::vector<size_t> byte_of;  // byte offset of each code point, then text.size()
  for (size_t pos = 0; pos < text.size();) {
    const utf8::Decoded d = utf8::decode(text, pos);
    cps.push_back(d.length == 0 ? char32_t(0xFFFD) : d.code_point);
    byte_of.push_back(pos);
    pos += d.length == 0 ? 1 : d.length;
  }
  byte_of.push_back(text.size());

  std::u32string units[2];  // [collapsed], built when a pattern first needs them
  bool built[2] = {false, false};
  std::vector<std::pair<size_t, size_t>> pieces;
  if (!cps.empty()) pieces.emplace_back(0, cps.size());
  for (const SplitPattern& pattern : patterns) {
    const int mode = pattern.collapsed() ? 1 : 0;
    if (!built[mode]) units[mode] = split_units(cps, mode == 1), built[mode] = true;
    std::vector<std::pair<size_t, size_t>> out;
    out.reserve(pieces.size());
    for (const auto& [begin, end] : pieces) {
      size_t last = begin;
      for (size_t at = begin; at < end;) {
        const size_t stop = pattern.match_at(units[mode], begin, end, at);
        if (stop == std::u32string::npos) {
          ++at;
          continue;
        }
        if (at > last) out.emplace_back(last, at);  // the unmatched text before the match
        out.emplace_back(at, stop);
        last = at = stop;
      }
      if (last < end) out.emplace_back(last, end);
    }
    pieces = std::move(out);
  }
  for (auto& [b, e] : pieces) b = byte_of[b], e = byte_of[e];
  return pieces;
}

}  // namespace atlas
