// The Llama 3 / Qwen2 split regex by hand. Each alternative of the pattern is tried in order at
// the current position, as a backtracking engine does; the comments give the alternative and
// how its backtracking resolves on a run of one character class.
#include "core/tokenizers/hf_pretokenize.h"

#include "core/tokenizers/bpe_tokenizer.h"
#include "core/tokenizers/llamacpp_pretokenize.h"
#include "core/tokenizers/unicode_categories.h"
#include "core/tokenizers/utf8.h"
#include "core/tokenizers/char_class.h"

namespace atlas {

const std::string_view kLlama3SplitPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const std::string_view kQwen2SplitPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const std::string_view kGpt2SplitPattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

namespace {

struct ClassifiedCodePoint {
  char32_t cp;
  size_t begin;  // byte offset in the text
  CharClass cls;
};

std::vector<ClassifiedCodePoint> decode_classified(std::string_view text) {
  std::vector<ClassifiedCodePoint> out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const utf8::Decoded d = utf8::decode(text, pos);
    const size_t len = d.length == 0 ? 1 : d.length;
    const char32_t cp = d.length == 0 ? 0xFFFD : d.code_point;
    out.push_back({cp, pos, d.length == 0 ? CharClass::Other : classify(cp)});
    pos += len;
  }
  return out;
}

bool is_cr_or_lf(char32_t cp) { return cp == '\r' || cp == '\n'; }

// (?i:'s|'t|'re|'ve|'m|'ll|'d): the length in code points, 0 if none. Case-insensitive
// matching uses Unicode simple case folding, under which U+017F LATIN SMALL LETTER LONG S folds
// to "s"; no other character folds onto the letters used here.
size_t contraction_length_any_case(const std::vector<ClassifiedCodePoint>& cps, size_t i,
                                   bool ascii_only) {
  if (cps[i].cp != '\'' || i + 1 >= cps.size()) return 0;
  const auto lower = [](char32_t c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; };
  const char32_t a = lower(cps[i + 1].cp);
  if (a == 's' || (a == 0x17F && !ascii_only) || a == 't' || a == 'm' || a == 'd') return 2;
  if (i + 2 >= cps.size()) return 0;
  const char32_t b = lower(cps[i + 2].cp);
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

}  // namespace

std::vector<std::pair<size_t, size_t>> llama3_pretokenize(std::string_view text,
                                                          bool single_digits,
                                                          bool ascii_contractions) {
  const std::vector<ClassifiedCodePoint> cps = decode_classified(text);
  const size_t n = cps.size();
  const auto byte_at = [&](size_t i) { return i < n ? cps[i].begin : text.size(); };
  const auto run_end = [&](size_t i, CharClass c) {
    while (i < n && cps[i].cls == c) ++i;
    return i;
  };

  std::vector<std::pair<size_t, size_t>> pieces;
  size_t i = 0;
  while (i < n) {
    const CharClass c = cps[i].cls;
    size_t end = 0;
    if (const size_t len = contraction_length_any_case(cps, i, ascii_contractions)) {
      end = i + len;
    } else if (c == CharClass::Letter) {
      // [^\r\n\p{L}\p{N}]?\p{L}+ with the optional class empty: the letter run.
      end = run_end(i, CharClass::Letter);
    } else if (c != CharClass::Number && !is_cr_or_lf(cps[i].cp) && i + 1 < n &&
               cps[i + 1].cls == CharClass::Letter) {
      // The same alternative with one leading character that is neither a letter, a digit
      // nor CR/LF: a space, a tab, punctuation or a symbol joins the word after it.
      end = run_end(i + 1, CharClass::Letter);
    } else if (c == CharClass::Number) {
      // \p{N}{1,3} (greedy, so runs split into threes from the left) or \p{N}.
      end = std::min(run_end(i, CharClass::Number), i + (single_digits ? 1 : 3));
    } else if (c == CharClass::Other ||
               (cps[i].cp == ' ' && i + 1 < n && cps[i + 1].cls == CharClass::Other)) {
      //  ?[^\s\p{L}\p{N}]+[\r\n]*: the symbol run (after an optional space), then any CR/LF.
      end = run_end(c == CharClass::Other ? i : i + 1, CharClass::Other);
      while (end < n && is_cr_or_lf(cps[end].cp)) ++end;
    } else {
      // Whitespace. \s*[\r\n]+ : \s* takes the run and gives back until [\r\n]+ matches, so the
      // piece ends after the run's last CR/LF. Without one, \s+(?!\S): the run, less its last
      // character when a non-space follows (that character then leads the next word); a single
      // space before a non-space is left to \s+.
      const size_t run = run_end(i, CharClass::Space);
      size_t last_newline = n;
      for (size_t k = i; k < run; ++k)
        if (is_cr_or_lf(cps[k].cp)) last_newline = k;
      if (last_newline != n)
        end = last_newline + 1;
      else
        end = (run < n && run - i > 1) ? run - 1 : run;
    }
    pieces.emplace_back(byte_at(i), byte_at(end));
    i = end;
  }
  return pieces;
}

std::vector<std::pair<size_t, size_t>> split_pretokenize(SplitRegex regex, std::string_view text) {
  switch (regex) {
    case SplitRegex::Llama3: return llama3_pretokenize(text, false);
    case SplitRegex::Qwen2: return llama3_pretokenize(text, true);
    case SplitRegex::Gpt2: return gpt2_pretokenize(text);
    default: return llamacpp_pretokenize(regex, text);
  }
  return {{0, text.size()}};
}

}  // namespace atlas
