// libFuzzer target: the config files of a Hugging Face model directory as the loader reads them
// before any weight (core/formats/hf/hf_config.cpp, hf_gpt2.cpp, hf_bert.cpp, hf_vit.cpp): config.json
// mapped by its model_type, and a ViT's preprocessor_config.json. Input layout: the text up to
// the first "\x00\x00" is config.json, the rest preprocessor_config.json (absent when empty).
// Tokenizer files are not read (fuzz_hf_tokenizer covers them). An accepted directory must give
// a config that validates; the only acceptable failure is AtlasError (a message naming the
// file); anything else (another exception, a crash, a sanitizer report, a hang) is a bug.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/tensor/error.h"
#include "core/formats/hf/hf_checkpoint.h"

namespace fs = std::filesystem;

namespace {

const fs::path& scratch_dir() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("atlas-fuzz-hf-config-" + std::to_string(getpid()));
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t cut = input.find(std::string("\0\0", 2));
  const std::string config = input.substr(0, cut);
  const std::string preprocessor = cut == std::string::npos ? "" : input.substr(cut + 2);
  const fs::path& dir = scratch_dir();
  std::ofstream(dir / "config.json", std::ios::binary) << config;
  std::error_code ec;
  fs::remove(dir / "preprocessor_config.json", ec);
  if (!preprocessor.empty()) std::ofstream(dir / "preprocessor_config.json", std::ios::binary) << preprocessor;
  try {
    const atlas::ModelConfig c = atlas::read_hf_config(dir.string(), {.tokenizer = false});
    atlas::validate_config(c, "fuzz");  // what the loader accepted must be a valid engine config
  } catch (const atlas::AtlasError&) {
    // A malformed or unsupported config is refused with a message naming the file: fine.
  }
  return 0;
}
