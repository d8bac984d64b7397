#include "core/tokenizers/token_budget.h"

#include <algorithm>

#include "core/tensor/error.h"
#include "core/formats/input_file.h"  // format_bytes

namespace atlas {

namespace {

constexpr size_t kChunkBytes = size_t(1) << 16;

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }
bool is_continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// End of the chunk that starts at `begin`: just before a whitespace character when there is
// one in the second half of the chunk (tokenizers split there anyway), else at a UTF-8
// character boundary.
size_t chunk_end(const std::string& text, size_t begin) {
  const size_t limit = std::min(text.size(), begin + kChunkBytes);
  if (limit == text.size()) return limit;
  for (size_t i = limit; i > begin + kChunkBytes / 2; --i)
    if (is_space(text[i])) return i;
  size_t i = limit;
  while (i > begin + 1 && is_continuation(text[i])) --i;
  return i;
}

}  // namespace

void check_token_budget(const Tokenizer& tokenizer, const std::string& text, int64_t max_tokens,
                        const std::string& what) {
  // Every tokenizer makes at most one token per byte plus a few special tokens; texts that
  // cannot pass the limit are not worth counting twice.
  if (max_tokens <= 0 || text.size() <= kChunkBytes || int64_t(text.size()) + 4 <= max_tokens)
    return;
  int64_t count = 0, chunks = 0;
  for (size_t begin = 0; begin < text.size();) {
    const size_t end = chunk_end(text, begin);
    count += static_cast<int64_t>(tokenizer.encode(text.substr(begin, end - begin)).size());
    ++chunks;
    if (count > max_tokens + 4 * chunks)  // slack for the special tokens each chunk may add
      throw AtlasError(what + " has more than " + std::to_string(max_tokens) +
                       " tokens (the model's max_positions): the first " + format_bytes(end) +
                       " of its " + format_bytes(text.size()) + " already make " +
                       std::to_string(count) + "; shorten it");
    begin = end;
  }
}

}  // namespace atlas
