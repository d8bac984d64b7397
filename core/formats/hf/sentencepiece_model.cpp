// tokenizer.model, SentencePiece's ModelProto, read with the protobuf wire format
// (protobuf.dev/programming-guides/encoding): each field is a varint key (field number << 3 |
// wire type) followed by a varint (0), 8 bytes (1), a varint length and that many bytes (2) or
// 4 bytes (5). Nested messages are length-delimited. Field numbers from google/sentencepiece
// src/sentencepiece_model.proto.
#include "core/formats/hf/sentencepiece_model.h"

#include <cstring>
#include <tuple>
#include <utility>

#include "core/formats/gguf_tokenizer.h"
#include "core/formats/input_file.h"
#include "core/tensor/error.h"
#include "core/tokenizers/utf8.h"

namespace atlas {
namespace {

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

// One message's bytes; `base` is their offset in the file, so messages name file offsets.
class ProtoReader {
 public:
  ProtoReader(std::string_view bytes, size_t base, const std::string& origin)
      : bytes_(bytes), base_(base), origin_(origin) {}

  bool done() const { return at_ == bytes_.size(); }

  [[noreturn]] void fail(const std::string& problem) const {
    throw AtlasError(origin_ + ": byte " + std::to_string(base_ + at_) + ": " + problem +
                     " (not a SentencePiece tokenizer.model, or a damaged one)");
  }

  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      if (at_ == bytes_.size()) fail("a varint runs past the end of its message");
      const uint8_t b = uint8_t(bytes_[at_++]);
      if (shift == 63 && b > 1) fail("a varint is longer than 64 bits");
      v |= uint64_t(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    fail("a varint is longer than 10 bytes");
  }

  // The key of the next field: its number, with its wire type in `wire`.
  uint64_t key(uint32_t& wire) {
    const size_t start = at_;
    key_at_ = start;
    const uint64_t k = varint();
    wire = uint32_t(k & 7);
    if (k >> 3 == 0) {
      at_ = start;
      fail("a field numbered 0");
    }
    if (wire == 3 || wire == 4) {
      at_ = start;
      fail("a group (wire type " + std::to_string(wire) + "), which SentencePiece models never use");
    }
    if (wire != kVarint && wire != kFixed64 && wire != kLengthDelimited && wire != kFixed32) {
      at_ = start;
      fail("unknown wire type " + std::to_string(wire));
    }
    return k >> 3;
  }

  // A length-delimited field's bytes, as a reader of their own.
  ProtoReader message() {
    const uint64_t n = varint();
    if (n > bytes_.size() - at_)
      fail("a length of " + std::to_string(n) + " bytes runs past the end of its message (" +
           std::to_string(bytes_.size() - at_) + " bytes left)");
    ProtoReader sub(bytes_.substr(at_, size_t(n)), base_ + at_, origin_);
    at_ += size_t(n);
    return sub;
  }

  std::string string(size_t max_bytes, const char* what) {
    const size_t start = at_;
    ProtoReader s = message();
    if (s.bytes_.size() > max_bytes) {
      at_ = start;
      fail(std::string(what) + " is " + std::to_string(s.bytes_.size()) + " bytes long (at most " +
           std::to_string(max_bytes) + ")");
    }
    return std::string(s.bytes_);
  }

  float fixed32_float() {
    if (bytes_.size() - at_ < 4) fail("a 32-bit value runs past the end of its message");
    uint32_t u = 0;
    for (int i = 0; i < 4; ++i) u |= uint32_t(uint8_t(bytes_[at_ + size_t(i)])) << (8 * i);
    at_ += 4;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }

  void skip(uint32_t wire) {
    if (wire == kVarint) {
      varint();
    } else if (wire == kLengthDelimited) {
      message();
    } else {
      const size_t n = wire == kFixed64 ? 8 : 4;
      if (bytes_.size() - at_ < n) fail("a fixed-size value runs past the end of its message");
      at_ += n;
    }
  }

  // A known field of the wrong wire type is refused: skipping it would read another layout.
  void expect(uint32_t wire, uint32_t want, const char* field) {
    if (wire == want) return;
    at_ = key_at_;  // the message names the field's key
    fail(std::string(field) + " has wire type " + std::to_string(wire) + ", expected " +
         std::to_string(want));
  }

 private:
  std::string_view bytes_;
  size_t base_;
  const std::string& origin_;
  size_t at_ = 0;
  size_t key_at_ = 0;  // where the last key began
};

// int32 and enum fields: negative values are sign-extended to 64 bits on the wire.
int64_t as_int32(uint64_t v) { return int64_t(int32_t(uint32_t(v))); }

void read_piece(ProtoReader r, SentencePieceModel& m) {
  std::string piece;
  float score = 0;
  int64_t type = kPieceNormal;
  while (!r.done()) {
    uint32_t wire;
    const uint64_t field = r.key(wire);
    if (field == 1) {
      r.expect(wire, kLengthDelimited, "SentencePiece.piece");
      piece = r.string(kMaxSentencePieceBytes, "a piece");
    } else if (field == 2) {
      r.expect(wire, kFixed32, "SentencePiece.score");
      score = r.fixed32_float();
    } else if (field == 3) {
      r.expect(wire, kVarint, "SentencePiece.type");
      type = as_int32(r.varint());
    } else {
      r.skip(wire);
    }
  }
  m.pieces.push_back(std::move(piece));
  m.scores.push_back(double(score));
  m.types.push_back(type);
}

void read_trainer_spec(ProtoReader r, SentencePieceModel& m) {
  while (!r.done()) {
    uint32_t wire;
    const uint64_t field = r.key(wire);
    int64_t* slot = field == 3    ? &m.model_type
                    : field == 40 ? &m.unk_id
                    : field == 41 ? &m.bos_id
                    : field == 42 ? &m.eos_id
                    : field == 43 ? &m.pad_id
                                  : nullptr;
    if (slot != nullptr) {
      r.expect(wire, kVarint, "a TrainerSpec enum or id");
      *slot = as_int32(r.varint());
    } else if (field == 35) {
      r.expect(wire, kVarint, "TrainerSpec.byte_fallback");
      m.byte_fallback = r.varint() != 0;
    } else {
      r.skip(wire);
    }
  }
}

void read_normalizer_spec(ProtoReader r, SentencePieceModel& m) {
  while (!r.done()) {
    uint32_t wire;
    const uint64_t field = r.key(wire);
    if (field == 1) {
      r.expect(wire, kLengthDelimited, "NormalizerSpec.name");
      m.normalizer_name = r.string(256, "the normalizer name");
    } else if (field == 3) {
      r.expect(wire, kVarint, "NormalizerSpec.add_dummy_prefix");
      m.add_dummy_prefix = r.varint() != 0;
    } else if (field == 4) {
      r.expect(wire, kVarint, "NormalizerSpec.remove_extra_whitespaces");
      m.remove_extra_whitespaces = r.varint() != 0;
    } else {
      r.skip(wire);
    }
  }
}

std::string shown(const std::string& s) { return "\"" + (utf8::is_valid(s) ? s : "?") + "\""; }

}  // namespace

SentencePieceModel parse_sentencepiece_model(std::string_view bytes, const std::string& origin) {
  SentencePieceModel m;
  ProtoReader r(bytes, 0, origin);
  while (!r.done()) {
    uint32_t wire;
    const uint64_t field = r.key(wire);
    if (field == 1) {
      r.expect(wire, kLengthDelimited, "ModelProto.pieces");
      if (m.pieces.size() == kMaxSentencePieces)
        r.fail("more than " + std::to_string(kMaxSentencePieces) + " pieces");
      read_piece(r.message(), m);
    } else if (field == 2) {
      r.expect(wire, kLengthDelimited, "ModelProto.trainer_spec");
      read_trainer_spec(r.message(), m);
    } else if (field == 3) {
      r.expect(wire, kLengthDelimited, "ModelProto.normalizer_spec");
      read_normalizer_spec(r.message(), m);
    } else {
      r.skip(wire);
    }
  }
  if (m.pieces.empty())
    throw AtlasError(origin + ": has no pieces (not a SentencePiece tokenizer.model?)");
  return m;
}

SentencePieceModel read_sentencepiece_model(const std::string& path) {
  return parse_sentencepiece_model(read_input_file(path, InputKind::TokenizerFile), path);
}

TokenizerConfig tokenizer_from_sentencepiece(const SentencePieceModel& m, const std::string& origin,
                                             bool add_bos, bool add_eos) {
  const auto fail = [&](const std::string& problem) -> void {
    throw AtlasError(origin + ": " + problem);
  };
  if (m.model_type != 2) {
    const char* names[] = {"", "UNIGRAM", "BPE", "WORD", "CHAR"};
    const std::string name = m.model_type >= 1 && m.model_type <= 4
                                 ? names[m.model_type]
                                 : "number " + std::to_string(m.model_type);
    fail("trainer_spec.model_type is " + name +
         "; only BPE SentencePiece models (Llama 1/2, Mistral, Gemma) are supported");
  }
  if (!m.normalizer_name.empty() && m.normalizer_name != "identity")
    fail("normalizer_spec.name is " + shown(m.normalizer_name) +
         "; only the \"identity\" normalizer is supported (no Unicode normalization is run)");
  if (m.remove_extra_whitespaces)
    fail("normalizer_spec.remove_extra_whitespaces is true (SentencePiece would collapse runs of "
         "spaces); not supported");
  SpmVocab v;
  v.tokens = m.pieces;
  v.scores = m.scores;
  v.types = m.types;
  for (size_t i = 0; i < m.types.size(); ++i) {
    if (m.types[i] < kPieceNormal || m.types[i] > kPieceByte)
      fail("pieces[" + std::to_string(i) + "] has type " + std::to_string(m.types[i]) +
           " (types are 1 to 6)");
    if (m.types[i] == kPieceUnknown && v.unk_id < 0) v.unk_id = int64_t(i);
  }
  v.add_space_prefix = m.add_dummy_prefix;
  TokenizerConfig c = spm_tokenizer_config(std::move(v), origin, "pieces");
  for (const auto& [add, id, slot, name] :
       {std::tuple{add_bos, m.bos_id, &c.bos, "bos_id"},
        std::tuple{add_eos, m.eos_id, &c.eos, "eos_id"}}) {
    if (!add) continue;
    if (id < 0 || size_t(id) >= c.vocab.size())
      fail(std::string("trainer_spec.") + name + " " + std::to_string(id) + " is outside the " +
           std::to_string(c.vocab.size()) + " pieces, but the tokenizer adds that token");
    *slot = c.vocab[size_t(id)];
  }
  return c;
}

}  // namespace atlas
