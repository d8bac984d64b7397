#pragma once
// The one JSON text parser for files from users (model configs, Hugging Face configs and
// tokenizers, safetensors headers, weight indexes, dump manifests, training state). Unlike
// nlohmann's DOM parser it caps the nesting depth (a 98 MB header of "[[[[..." took 3.7 GB and a
// minute), can refuse duplicate keys (nlohmann keeps the last silently), and reports every
// error with its byte position and the origin, as valid UTF-8.
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace atlas {

struct JsonLimits {
  // serde_json (used by the safetensors and tokenizers libraries) stops at 128 levels; real
  // configs need 3, tokenizer.json 6.
  size_t max_depth = 128;
  // Our own formats refuse a repeated key; files written by Python keep the last, as Python does.
  bool refuse_duplicate_keys = true;
};

// Throws AtlasError "<origin>: malformed JSON at byte N (line L, column C): ..." and the like
// (without "<origin>: " when origin is empty, for callers that word the message themselves).
nlohmann::json parse_json_text(std::string_view text, const std::string& origin,
                               JsonLimits limits = {});

// Invalid UTF-8 bytes as \xNN, so a message quoting broken input stays printable.
std::string escape_invalid_utf8(std::string_view s);
// Length of the strict (RFC 3629) UTF-8 sequence at s[pos], 0 if invalid.
size_t utf8_sequence_length(std::string_view s, size_t pos);

}  // namespace atlas
