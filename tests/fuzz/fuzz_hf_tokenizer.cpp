// libFuzzer target: the Hugging Face tokenizer files a user's checkpoint directory brings
// (core/formats/hf/hf_tokenizer_files.cpp): vocab.json + merges.txt (GPT-2), vocab.txt +
// tokenizer_config.json (BERT), tokenizer.json (also the Llama-family pipelines, read by
// core/formats/hf/hf_llama_tokenizer.cpp), checked against config.json's vocab_size.
// Input layout: byte 0 picks the model type (gpt2, bert, distilbert, llama, qwen2); the rest is split at
// "\x00\x00" into the files' texts in the order below; a missing or empty part means the file
// is absent. Each accepted directory must give a tokenizer whose ids stay inside its vocab on
// a fixed text and on the input itself; the only acceptable failure is AtlasError (a message
// naming the file); anything else (another exception, a crash, a sanitizer report) is a bug.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/tensor/error.h"
#include "core/formats/hf/hf_tokenizer_files.h"
#include "core/tokenizers/tokenizer.h"

namespace fs = std::filesystem;

namespace {

const char* kFiles[] = {"vocab.json", "merges.txt", "vocab.txt", "tokenizer_config.json", "tokenizer.json",
                        "config.json"};

const fs::path& scratch_dir() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("atlas-fuzz-hf-" + std::to_string(getpid()));
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

std::vector<std::string> split_parts(const std::string& s) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (parts.size() < 6) {
    const size_t at = s.find(std::string("\0\0", 2), start);
    if (at == std::string::npos) {
      parts.push_back(s.substr(start));
      break;
    }
    parts.push_back(s.substr(start, at - start));
    start = at + 2;
  }
  parts.resize(6);
  return parts;
}

void check_ids(const atlas::Tokenizer& tok, const std::string& text) {
  try {
    for (const auto& t : tok.encode(text)) {
      if (t.id < 0 || t.id >= tok.vocab_size()) {
        std::fprintf(stderr, "token id %d outside the vocab of %lld\n", t.id, static_cast<long long>(tok.vocab_size()));
        std::abort();
      }
      (void)tok.label(t.id);
    }
  } catch (const atlas::AtlasError&) {
    // Unrepresentable input is refused with a message: fine.
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const char* types[] = {"gpt2", "bert", "distilbert", "llama", "qwen2"};
  const std::string model_type = types[data[0] % 5];
  const std::vector<std::string> parts = split_parts(std::string(reinterpret_cast<const char*>(data + 1), size - 1));
  const fs::path& dir = scratch_dir();
  for (size_t i = 0; i < 6; ++i) {
    const fs::path file = dir / kFiles[i];
    std::error_code ec;
    fs::remove(file, ec);
    if (parts[i].empty()) continue;
    std::ofstream(file, std::ios::binary) << parts[i];
  }
  try {
    const atlas::TokenizerConfig cfg =
        atlas::read_hf_tokenizer(dir.string(), model_type, parts[5].empty() ? "{}" : parts[5]);
    const auto tok = atlas::make_tokenizer(cfg);
    check_ids(*tok, "Hello, world! It's 2026 \xC3\xA9t\xC3\xA9 \xE4\xB8\xAD\xE6\x96\x87");
    check_ids(*tok, parts[0].substr(0, 256));
  } catch (const atlas::AtlasError&) {
    // A malformed file is refused with a message naming it: fine.
  }
  return 0;
}
