#pragma once
// SentencePiece's own model file, tokenizer.model: a protobuf ModelProto
// (google/sentencepiece src/sentencepiece_model.proto), read by hand for the fields a
// SentencePiece BPE tokenizer needs:
//   1 pieces           repeated SentencePiece {1 piece, 2 score (float), 3 type (enum)}
//   2 trainer_spec     3 model_type (1 UNIGRAM, 2 BPE, 3 WORD, 4 CHAR; UNIGRAM when absent),
//                      35 byte_fallback, 40-43 unk/bos/eos/pad ids (defaults 0, 1, 2, -1)
//   3 normalizer_spec  1 name, 3 add_dummy_prefix, 4 remove_extra_whitespaces (both true when
//                      absent)
// Every other field is skipped by its wire type. Hugging Face Llama-family folders that ship
// no tokenizer.json carry their tokenizer only in this file (Llama 1/2, Mistral, Gemma).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/config/config.h"

namespace atlas {

// ModelProto.SentencePiece.Type; the same numbers as llama.cpp's llama_token_type.
enum SentencePieceType : int64_t {
  kPieceNormal = 1,
  kPieceUnknown = 2,
  kPieceControl = 3,
  kPieceUserDefined = 4,
  kPieceUnused = 5,
  kPieceByte = 6,
};

struct SentencePieceModel {
  std::vector<std::string> pieces;
  std::vector<double> scores;  // stored as float32
  std::vector<int64_t> types;  // SentencePieceType, kPieceNormal when absent
  int64_t model_type = 1;      // trainer_spec.model_type: 1 unigram, 2 BPE, 3 word, 4 char
  bool byte_fallback = false;
  int64_t unk_id = 0, bos_id = 1, eos_id = 2, pad_id = -1;
  std::string normalizer_name;  // "" when absent
  bool add_dummy_prefix = true;
  bool remove_extra_whitespaces = true;
};

// Limits on what a file may claim, checked before anything is allocated.
constexpr size_t kMaxSentencePieces = size_t(4) << 20;
constexpr size_t kMaxSentencePieceBytes = 4096;

// Parses the bytes of a tokenizer.model. Throws AtlasError "<origin>: byte <offset>: <problem>"
// on a truncated varint, a length past the end, a group or unknown wire type, a field of the
// wrong wire type, or too many or too long pieces.
SentencePieceModel parse_sentencepiece_model(std::string_view bytes, const std::string& origin);

// Reads `path` under the tokenizer-file input policy (core/formats/input_file.h) and parses it.
SentencePieceModel read_sentencepiece_model(const std::string& path);

// The sentencepiece_bpe TokenizerConfig of a BPE model, as the GGUF "llama" vocabulary
// llama.cpp converts from the same file would give (spm_tokenizer_config): add_dummy_prefix
// is add_space_prefix, the UNKNOWN piece the unknown token, and bos (when `add_bos`) the piece at
// bos_id. Unigram, word and char models, and normalizers other than "identity" (or absent),
// are refused by name: the tokenizer here runs SentencePiece BPE without normalization.
TokenizerConfig tokenizer_from_sentencepiece(const SentencePieceModel& m, const std::string& origin,
                                             bool add_bos, bool add_eos);

}  // namespace atlas
