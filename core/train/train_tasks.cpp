// The built-in training tasks and how a (input, output) pair becomes a training example for
// each architecture. Every string is drawn from the task's own character vocabulary.
#include "core/train/train_tasks.h"

#include <algorithm>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>

#include "core/formats/input_file.h"
#include "core/model/mechanism_module.h"
#include "core/tensor/error.h"
#include "core/tokenizers/utf8.h"

namespace atlas::train {

namespace {

const char* kLetters = "abcdefghij";  // 10 symbols: enough for copy/reverse/sort patterns
const char* kAlphabet = "abcdefghijklmnopqrstuvwxyz";

std::vector<std::string> vocab_of(const std::string& chars) {
  std::vector<std::string> v{"<unk>"};
  for (char ch : chars) v.emplace_back(1, ch);
  return v;
}

char pick(Rng& rng, const char* set, size_t n) { return set[rng.next() % n]; }

std::string random_letters(Rng& rng, int64_t n, const char* set, size_t set_size) {
  std::string s;
  for (int64_t i = 0; i < n; ++i) s += pick(rng, set, set_size);
  return s;
}

// Splits valid UTF-8 into characters.
std::vector<std::string> characters(const std::string& text) {
  std::vector<std::string> out;
  for (size_t pos = 0; pos < text.size();) {
    const utf8::Decoded d = utf8::decode(text, pos);
    out.push_back(text.substr(pos, d.length));
    pos += d.length;
  }
  return out;
}

Task char_lm_task(const TaskOptions& o) {
  if (o.text_path.empty())
    throw AtlasError("task char-lm needs a text file: --text-file PATH");
  Task t;
  t.text = read_input_file(o.text_path, InputKind::Text);
  const size_t bad = utf8::find_invalid(t.text);
  if (bad != std::string::npos)
    throw AtlasError(o.text_path + ": not valid UTF-8 at byte " + std::to_string(bad) +
                     " (char-lm reads UTF-8 text)");
  auto chars = std::make_shared<std::vector<std::string>>(characters(t.text));
  if (static_cast<int64_t>(chars->size()) < o.length + 1)
    throw AtlasError(o.text_path + ": has " + std::to_string(chars->size()) +
                     " characters; char-lm with --length " + std::to_string(o.length) +
                     " needs at least " + std::to_string(o.length + 1));
  std::set<std::string> distinct(chars->begin(), chars->end());
  distinct.erase("<unk>");
  if (distinct.size() > 4096)
    throw AtlasError(o.text_path + ": " + std::to_string(distinct.size()) +
                     " distinct characters; char-lm supports at most 4096");
  t.vocab = {"<unk>"};
  t.vocab.insert(t.vocab.end(), distinct.begin(), distinct.end());
  t.name = "char-lm";
  t.description = "next-character prediction on " + o.text_path;
  t.decoder_only = true;
  const int64_t n = o.length;
  t.sample = [chars, n](Rng& rng, std::string& input, std::string& output) {
    const size_t start = rng.next() % (chars->size() - static_cast<size_t>(n));
    input = (*chars)[start];
    output.clear();
    for (int64_t i = 1; i <= n; ++i) output += (*chars)[start + static_cast<size_t>(i)];
  };
  return t;
}

}  // namespace

const std::vector<TaskListing>& list_tasks() {
  static const std::vector<TaskListing> tasks{
      {"copy", "repeat a string of letters a-j after '|': abcd|abcd"},
      {"reverse", "the letters in reverse order: abcd|dcba"},
      {"sort", "the letters sorted: dbca|abcd"},
      {"recall", "associative recall: key-value pairs, then a key: a1b2c3?b=2"},
      {"induction", "a random string of a-z repeated; predict the repeat: xqzkxqzk"},
      {"parity", "running parity of a bit string: 0110|0100"},
      {"parity-blank", "running parity with blanks for the answers: 0110|____ -> 0100 (no shortcut)"},
      {"addition", "add two numbers digit by digit: 1234+5678=06912"},
      {"char-lm", "next-character language model on a text file (--text-file)"},
  };
  return tasks;
}

Task make_task(const std::string& name, const TaskOptions& o) {
  if (o.length < 1 || o.length > 256)
    throw AtlasError("--length " + std::to_string(o.length) + " is out of range (1..256)");
  const int64_t n = o.length;
  Task t;
  t.name = name;
  t.separator = "|";
  if (name == "copy" || name == "reverse" || name == "sort") {
    t.vocab = vocab_of(std::string(kLetters) + "|_");
    t.sample = [n, name](Rng& rng, std::string& in, std::string& out) {
      in = random_letters(rng, n, kLetters, 10);
      out = in;
      if (name == "reverse") std::reverse(out.begin(), out.end());
      if (name == "sort") std::sort(out.begin(), out.end());
    };
  } else if (name == "recall") {
    if (n < 2 || n > 10)
      throw AtlasError("task recall stores --length pairs with distinct keys a-j: use 2..10");
    t.vocab = vocab_of(std::string(kLetters) + "0123456789?=|_");
    t.separator = "=";
    t.sample = [n](Rng& rng, std::string& in, std::string& out) {
      std::string keys = kLetters;
      for (size_t i = keys.size() - 1; i > 0; --i) std::swap(keys[i], keys[rng.next() % (i + 1)]);
      in.clear();
      std::string values;
      for (int64_t i = 0; i < n; ++i) {
        values += static_cast<char>('0' + rng.next() % 10);
        in += keys[i];
        in += values.back();
      }
      const size_t q = rng.next() % static_cast<size_t>(n);
      in += '?';
      in += keys[q];
      out = std::string(1, values[q]);
    };
  } else if (name == "induction") {
    if (n < 2) throw AtlasError("task induction needs --length >= 2");
    t.vocab = vocab_of(std::string(kAlphabet) + "|_");
    t.separator = "";
    // input = r + r[0], output = r[1..]: the model sees the repeat begin and must continue it
    // by looking back one position after the earlier occurrence (an induction head).
    t.sample = [n](Rng& rng, std::string& in, std::string& out) {
      const std::string r = random_letters(rng, n, kAlphabet, 26);
      in = r + r[0];
      out = r.substr(1);
    };
  } else if (name == "parity" || name == "parity-blank") {
    t.vocab = vocab_of("01|_");
    t.blank_outputs = name == "parity-blank";
    t.sample = [n](Rng& rng, std::string& in, std::string& out) {
      in.clear();
      out.clear();
      int parity = 0;
      for (int64_t i = 0; i < n; ++i) {
        const int bit = static_cast<int>(rng.next() & 1);
        parity ^= bit;
        in += static_cast<char>('0' + bit);
        out += static_cast<char>('0' + parity);
      }
    };
  } else if (name == "addition") {
    const int64_t digits = std::max<int64_t>(1, n / 2);
    if (digits > 9) throw AtlasError("task addition supports --length up to 19 (9 digits)");
    t.vocab = vocab_of("0123456789+=|_");
    t.separator = "=";
    t.sample = [digits](Rng& rng, std::string& in, std::string& out) {
      int64_t limit = 1;
      for (int64_t i = 0; i < digits; ++i) limit *= 10;
      const int64_t a = static_cast<int64_t>(rng.next() % uint64_t(limit));
      const int64_t b = static_cast<int64_t>(rng.next() % uint64_t(limit));
      auto padded = [](int64_t v, int64_t width) {
        std::string s = std::to_string(v);
        return std::string(static_cast<size_t>(width) - s.size(), '0') + s;
      };
      in = padded(a, digits) + "+" + padded(b, digits);
      out = padded(a + b, digits + 1);
    };
  } else if (name == "char-lm") {
    return char_lm_task(o);
  } else {
    std::vector<std::string> names;
    for (const auto& l : list_tasks()) names.push_back(l.name);
    throw AtlasError("unknown task \"" + name + "\" (did you mean " + nearest(name, names) +
                     "? tasks: copy, reverse, sort, recall, induction, parity, addition, char-lm)");
  }
  for (const auto& l : list_tasks())
    if (name == l.name) t.description = l.description;
  return t;
}

void configure_for_task(ModelConfig& c, const Task& task, int64_t length) {
  if (task.decoder_only && c.architecture != Architecture::Decoder)
    throw AtlasError("task " + task.name + " is next-character prediction and needs a decoder "
                     "preset (e.g. tiny-decoder)");
  c.tokenizer = TokenizerConfig{};
  c.tokenizer.kind = TokenizerKind::Chars;
  c.tokenizer.vocab = task.vocab;
  c.tokenizer.unk = "<unk>";
  c.pad_id = -1;  // examples have one length per batch entry: nothing to pad
  c.bos_id = -1;
  if (c.architecture == Architecture::EncoderDecoder) {
    // The decoder's start token needs a vocab entry of one character: the first of these
    // that the task does not use ("^" for every built-in task).
    for (const char* bos : {"^", "~", "\u2402", "\u25B6"}) {
      if (std::find(task.vocab.begin(), task.vocab.end(), bos) != task.vocab.end()) continue;
      c.bos_id = static_cast<int64_t>(task.vocab.size());
      c.tokenizer.vocab.push_back(bos);
      break;
    }
    if (c.bos_id < 0) throw AtlasError("no free character for the decoder's start token");
  }
  c.vocab_size = static_cast<int64_t>(c.tokenizer.vocab.size());
  // Room for a typed example, input + separator + output, with slack (recall's input is
  // 2 length + 2).
  c.max_positions = std::max<int64_t>(64, 2 * length + 8);
  // A Reformer's chunks must fit in a sequence (reformer-base: 128 > 64); positions are
  // sinusoidal there, so making room changes no weight.
  if (c.positional != Positional::Learned)  // e.g. an LSH chunk (core/model/mechanism_module.h)
    for (const AttentionMechanismModule* m : mechanisms_for(c))
      if (m->min_positions) c.max_positions = std::max(c.max_positions, m->min_positions(c));
  c.description = "trained by atlas train on task " + task.name + ": " + task.description;
}

TypedExample typed_example(const ModelConfig& c, const Task& task, const std::string& input,
                           const std::string& output) {
  if (c.architecture == Architecture::EncoderDecoder) return {input, output};
  if (c.architecture == Architecture::Decoder)
    return {input + task.separator +
                (task.blank_outputs ? std::string(characters(output).size(), '_') : output),
            ""};
  const std::string sep = task.separator.empty() ? "|" : task.separator;
  return {input + sep + std::string(characters(output).size(), '_'), ""};
}

Example encode_example(const ModelConfig& c, const Task& task, const Tokenizer& tok,
                       const std::string& input, const std::string& output) {
  auto ids = [&](const std::string& s) {
    std::vector<int32_t> v;
    for (const auto& t : tok.encode(s)) v.push_back(t.id);
    return v;
  };
  Example ex;
  const std::vector<int32_t> out = ids(output);
  if (c.architecture == Architecture::EncoderDecoder) {
    ex.source = ids(input);
    ex.target.push_back(static_cast<int32_t>(c.bos_id));
    ex.target.insert(ex.target.end(), out.begin(), out.end() - 1);
    ex.labels = out;
    return ex;
  }
  const TypedExample typed = typed_example(c, task, input, output);
  ex.source = ids(typed.source);
  ex.labels.assign(ex.source.size(), -1);
  const size_t first = ex.source.size() - out.size();  // first output (or blank) position
  if (c.architecture == Architecture::Decoder) {
    // Position p predicts token p + 1: the last prompt token predicts out[0].
    for (size_t i = 0; i < out.size(); ++i) ex.labels[first - 1 + i] = out[i];
  } else {
    for (size_t i = 0; i < out.size(); ++i) ex.labels[first + i] = out[i];
  }
  return ex;
}

Example make_example(const ModelConfig& c, const Task& task, const Tokenizer& tok, Rng& rng) {
  std::string input, output;
  task.sample(rng, input, output);
  return encode_example(c, task, tok, input, output);
}

}  // namespace atlas::train
