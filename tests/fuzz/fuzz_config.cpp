// libFuzzer target for parse_config: arbitrary bytes as config.json text.
// Built by the asan and fuzz presets (tests/fuzz/CMakeLists.txt); scripts/fuzz.sh runs it.
// Besides "no crash, no sanitizer report, only AtlasError escapes", it checks two properties:
// every error message starts with the origin and is valid UTF-8 (it goes to dialogs and JSON
// manifests), and every accepted config round-trips through config_to_json unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/config/config.h"
#include "core/tensor/error.h"

namespace {

bool valid_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += n;
  }
  return true;
}

[[noreturn]] void die(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_config: %s\n%s\n", what, detail.c_str());
  std::abort();
}

bool same(const atlas::ModelConfig& a, const atlas::ModelConfig& b) {
  return a.name == b.name && a.description == b.description &&
         a.architecture == b.architecture && a.tokenizer.kind == b.tokenizer.kind &&
         a.tokenizer.vocab == b.tokenizer.vocab && a.tokenizer.unk == b.tokenizer.unk &&
         a.tokenizer.lowercase == b.tokenizer.lowercase && a.vocab_size == b.vocab_size &&
         a.d_model == b.d_model && a.n_heads == b.n_heads && a.d_ff == b.d_ff &&
         a.n_layers == b.n_layers && a.n_decoder_layers == b.n_decoder_layers &&
         a.max_positions == b.max_positions && a.positional == b.positional &&
         a.sinusoid_layout == b.sinusoid_layout && a.scale_embedding == b.scale_embedding &&
         a.norm == b.norm && a.norm_position == b.norm_position && a.norm_eps == b.norm_eps &&
         a.fixnorm == b.fixnorm && a.activation == b.activation &&
         a.attention_bias == b.attention_bias && a.ffn_bias == b.ffn_bias &&
         a.output == b.output && a.pad_id == b.pad_id && a.bos_id == b.bos_id &&
         a.seed == b.seed && a.init_std == b.init_std;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::string origin = "fuzz.json";
  atlas::ModelConfig config;
  try {
    config = atlas::parse_config(text, origin);
  } catch (const atlas::AtlasError& e) {
    const std::string message = e.what();
    if (message.rfind(origin + ": ", 0) != 0) die("message does not start with the origin", message);
    if (!valid_utf8(message)) die("message is not valid UTF-8", message);
    return 0;
  }
  const std::string written = atlas::config_to_json(config);
  atlas::ModelConfig again;
  try {
    again = atlas::parse_config(written, "round-trip");
  } catch (const atlas::AtlasError& e) {
    die("config_to_json output was rejected", std::string(e.what()) + "\n" + written);
  }
  if (!same(config, again)) die("round trip changed the config", text + "\n" + written);
  return 0;
}
