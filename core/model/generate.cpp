#include "core/model/generate.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

#include "core/tensor/error.h"
#include "core/tensor/random.h"
#include "core/tokenizers/utf8.h"

namespace atlas {

namespace {

std::vector<double> softmax_row(const Tensor& logits, int64_t position, double temperature) {
  const int64_t V = logits.shape[1];
  const float* row = logits.data.data() + position * V;
  const double mx = *std::max_element(row, row + V);
  std::vector<double> p(static_cast<size_t>(V));
  double z = 0;
  for (int64_t v = 0; v < V; ++v) z += (p[size_t(v)] = std::exp((row[v] - mx) / temperature));
  for (double& x : p) x /= z;
  return p;
}

// GPT-2's bytes_to_unicode inverted: code point -> byte (openai/gpt-2 src/encoder.py).
const std::map<char32_t, uint8_t>& unicode_to_byte() {
  static const std::map<char32_t, uint8_t> table = [] {
    std::map<char32_t, uint8_t> t;
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      t[printable ? char32_t(b) : char32_t(256 + n++)] = uint8_t(b);
    }
    return t;
  }();
  return table;
}

// Decoded bytes as text; a token may end inside a character, whose bytes read U+FFFD.
std::string valid_text(const std::string& bytes) {
  std::string out;
  for (size_t pos = 0; pos < bytes.size();) {
    utf8::Decoded d = utf8::decode(bytes, pos);
    if (d.length == 0) {
      utf8::append(out, 0xFFFD);
      ++pos;
    } else {
      out.append(bytes, pos, d.length);
      pos += d.length;
    }
  }
  return out;
}

}  // namespace

std::vector<Prediction> top_k(const Model& model, const Tensor& logits, int64_t position,
                              int64_t k) {
  const std::vector<double> p = softmax_row(logits, position, 1.0);
  std::vector<int32_t> ids(p.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = int32_t(i);
  k = std::clamp<int64_t>(k, 0, int64_t(ids.size()));
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [&](int32_t a, int32_t b) {
    return p[size_t(a)] > p[size_t(b)] || (p[size_t(a)] == p[size_t(b)] && a < b);
  });
  std::vector<Prediction> out;
  for (int64_t i = 0; i < k; ++i) {
    const int32_t id = ids[size_t(i)];
    const std::string label = id < model.tokenizer().vocab_size() ? model.tokenizer().label(id)
                                                                   : "<" + std::to_string(id) + ">";
    out.push_back({id, label, p[size_t(id)]});
  }
  return out;
}

std::string decode_tokens(const Model& model, const std::vector<TokenInfo>& tokens) {
  const TokenizerConfig& tc = model.config().tokenizer;
  std::string out;
  if (tc.kind == TokenizerKind::SentencePieceBpe) {
    // "▁" stands for a space; "<0xE2>" byte-fallback tokens for their byte. The "▁" the
    // tokenizer put in front of the text is dropped again, as the checkpoints' decoders do.
    std::string bytes;
    bool strip_prefix = tc.space_prefix != SpacePrefix::None;
    for (const auto& t : tokens) {
      if (t.id < 0 || size_t(t.id) >= tc.vocab.size()) continue;
      const std::string& s = tc.vocab[size_t(t.id)];
      const bool special = s == tc.bos || s == tc.eos ||
                           std::any_of(tc.added_tokens.begin(), tc.added_tokens.end(),
                                       [&](const AddedToken& a) { return a.content == s; });
      if (special) {
        bytes += s;
        continue;
      }
      const size_t start = bytes.size();
      if (tc.byte_fallback && s.size() == 6 && s.rfind("<0x", 0) == 0 && s[5] == '>' &&
          std::isxdigit(static_cast<unsigned char>(s[3])) &&
          std::isxdigit(static_cast<unsigned char>(s[4]))) {
        bytes += char(std::stoi(s.substr(3, 2), nullptr, 16));
        continue;
      }
      for (size_t pos = 0; pos < s.size(); ++pos) {
        if (s.compare(pos, 3, "\xE2\x96\x81") == 0) {
          bytes += ' ';
          pos += 2;
        } else {
          bytes += s[pos];
        }
      }
      if (strip_prefix && bytes.size() > start && bytes[start] == ' ') bytes.erase(start, 1);
      strip_prefix = false;
    }
    return valid_text(bytes);
  }
  if (tc.kind != TokenizerKind::Gpt2Bpe && tc.kind != TokenizerKind::ByteLevelBpe) {
    for (const auto& t : tokens) out += t.label;
    return out;
  }
  std::string bytes;
  for (const auto& t : tokens) {
    if (t.id < 0 || size_t(t.id) >= tc.vocab.size()) continue;
    const std::string& s = tc.vocab[size_t(t.id)];
    for (size_t pos = 0; pos < s.size();) {
      utf8::Decoded d = utf8::decode(s, pos);
      if (d.length == 0) break;
      auto it = unicode_to_byte().find(d.code_point);
      if (it != unicode_to_byte().end()) bytes += char(it->second);
      else bytes += s.substr(pos, d.length);  // special tokens such as <|endoftext|>
      pos += d.length;
    }
  }
  return valid_text(bytes);
}

GenerateResult generate(const Model& model, const std::string& prompt,
                        const GenerateOptions& options, const RunOptions& run_options) {
  const ModelConfig& c = model.config();
  if (c.architecture != Architecture::Decoder || c.output == OutputHead::None)
    throw AtlasError("generate needs a decoder-only model with an output head (e.g. GPT-2); " +
                     c.name + " is not one");
  if (!options.greedy && !(options.temperature > 0) )
    throw AtlasError("--temperature must be > 0");
  GenerateResult r;
  r.prompt = model.tokenizer().encode(prompt);
  if (r.prompt.empty()) throw AtlasError("the prompt is empty: generation needs at least one token");
  const int64_t room = c.max_positions - int64_t(r.prompt.size());
  if (options.new_tokens > room)
    throw AtlasError("the prompt has " + std::to_string(r.prompt.size()) + " tokens; with " +
                     std::to_string(options.new_tokens) + " more it would exceed max_positions " +
                     std::to_string(c.max_positions) + " (at most " +
                     std::to_string(std::max<int64_t>(0, room)) + " new tokens fit)");
  std::vector<TokenInfo> seq = r.prompt;
  RunOptions quiet = run_options;
  quiet.trace = TraceOptions::none();
  Rng rng(options.seed);
  for (int64_t n = 0; n < options.new_tokens; ++n) {
    RunResult step = model.forward(seq, {}, quiet);
    const int64_t last = int64_t(seq.size()) - 1;
    int32_t next = 0;
    if (options.greedy) {
      next = top_k(model, step.output, last, 1).front().id;
    } else {
      const std::vector<double> p = softmax_row(step.output, last, options.temperature);
      double u = rng.uniform(), acc = 0;
      next = int32_t(p.size()) - 1;
      for (size_t v = 0; v < p.size(); ++v)
        if ((acc += p[v]) > u) {
          next = int32_t(v);
          break;
        }
    }
    TokenInfo t{next, next < model.tokenizer().vocab_size() ? model.tokenizer().label(next)
                                                            : "<" + std::to_string(next) + ">"};
    seq.push_back(t);
    r.generated.push_back(t);
    if (next == options.stop_id) break;
  }
  r.run = model.forward(seq, {}, run_options);
  r.text = decode_tokens(model, seq);
  return r;
}

}  // namespace atlas
