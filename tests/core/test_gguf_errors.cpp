// Bad GGUF files: each is refused with one message naming the file and the item at fault, before
// anything large is allocated (docs/bad-input.md, "GGUF"). Files are written byte by byte by
// tests/core/gguf_test_util.h and then broken in one way each.
#include <catch2/catch.hpp>
#include <filesystem>
#include <limits>

#include "core/formats/gguf.h"
#include "core/tensor/error.h"
#include "tests/core/gguf_test_util.h"
#include "tests/core/hf_test_util.h"

using namespace atlas;
using namespace gguf_test;
using Catch::Contains;
using Catch::StartsWith;

namespace {

GgufFile parse_owned(const Bytes& b) {
  return GgufFile::parse(Bytes(b.begin(), b.end()), "model.gguf");
}

Bytes one_f32_tensor(const std::string& name = "w") {
  Bytes data;
  for (int i = 0; i < 4; ++i) put_f32(data, float(i));
  Writer w;
  w.kv("general.architecture", str("llama")).tensor(name, {4}, T_F32, data);
  return w.build();
}

// A header with the given counts followed by `rest`.
Bytes raw(uint64_t tensors, uint64_t kvs, const Bytes& rest, uint32_t version = 3) {
  Bytes b = {'G', 'G', 'U', 'F'};
  put(b, version, 4);
  put(b, tensors, 8);
  put(b, kvs, 8);
  append(b, rest);
  return b;
}

}  // namespace

TEST_CASE("GGUF cut at any byte is refused with a message, never read past its end",
          "[gguf][errors]") {
  const Bytes full = tiny_model();
  REQUIRE_NOTHROW(parse_owned(full));
  for (size_t n = 0; n < full.size(); ++n) {
    const Bytes cut(full.begin(), full.begin() + long(n));
    INFO("cut at " << n);
    CHECK_THROWS_WITH(parse_owned(cut), StartsWith("model.gguf: "));
  }
  CHECK_THROWS_WITH(parse_owned(Bytes{'G', 'G'}),
                    "model.gguf: file is 2 bytes, too short for a GGUF file (truncated or empty)");
  CHECK_THROWS_WITH(parse_owned(Bytes(full.begin(), full.begin() + 30)),
                    "model.gguf: metadata_kv_count 6 is absurd for a file of 30 bytes (each "
                    "key/value takes at least 13 bytes; truncated?)");
  // Cut inside the 11th token of tokenizer.ggml.tokens (its length field starts at byte 354).
  CHECK_THROWS_WITH(parse_owned(Bytes(full.begin(), full.begin() + 360)),
                    "model.gguf: metadata key 5 (\"tokenizer.ggml.tokens\"), element 10: "
                    "truncated: a string element needs 8 bytes at byte 354 but the file ends at "
                    "byte 360");
  // Cut inside the last tensor's data: the header is whole, the bytes are not.
  Bytes cut(full.begin(), full.end() - 1);
  CHECK_THROWS_WITH(parse_owned(cut), Contains("tensor 2 (\"blk.0.ffn_down.weight\"): data ["));
  CHECK_THROWS_WITH(parse_owned(cut),
                    Contains(") ends past the file (" + std::to_string(cut.size()) + " bytes)"));
}

TEST_CASE("GGUF with a wrong magic or version is refused by name", "[gguf][errors]") {
  Bytes b = one_f32_tensor();
  b[3] = 'L';
  CHECK_THROWS_WITH(parse_owned(b),
                    "model.gguf: not a GGUF file: it starts with \"GGUL\", expected "
                    "\"GGUF\"");
  CHECK_THROWS_WITH(parse_owned(raw(0, 0, {}, 1)), Contains("GGUF version 1 is not supported"));
  CHECK_THROWS_WITH(parse_owned(raw(0, 0, {}, 4)),
                    "model.gguf: GGUF version 4 is not supported; supported: 2, 3");
  CHECK_THROWS_WITH(parse_owned(raw(0, 0, {}, 0x03000000u)), Contains("big-endian GGUF file"));
  CHECK_NOTHROW(parse_owned(raw(0, 0, {}, 2)));
}

TEST_CASE("GGUF string lengths that run past the file are refused", "[gguf][errors]") {
  Bytes key;
  put(key, 1ull << 40, 8);  // a key length of 1 TB in a 40-byte file
  append(key, Bytes(8, 'a'));
  CHECK_THROWS_WITH(parse_owned(raw(0, 1, key)),
                    "model.gguf: metadata key 0: the key: string length 1099511627776 runs past "
                    "the end of the file (8 bytes left at byte 32)");
  Bytes val;
  put_str(val, "general.name");
  put(val, kStr, 4);
  put(val, 1000, 8);
  append(val, Bytes(10, 'x'));
  CHECK_THROWS_WITH(parse_owned(raw(0, 1, val)),
                    Contains("metadata key 0 (\"general.name\"): a string value: string length "
                             "1000 runs past the end of the file (10 bytes left"));
  Bytes name;
  put(name, 99, 8);
  append(name, Bytes(30, 'n'));
  CHECK_THROWS_WITH(parse_owned(raw(1, 0, name)),
                    Contains("tensor 0: the name: string length 99 runs past the end"));
}

TEST_CASE("GGUF counts too large for the file are refused before anything is allocated",
          "[gguf][errors]") {
  CHECK_THROWS_WITH(parse_owned(raw(0, 1ull << 60, Bytes(64, 0))),
                    "model.gguf: metadata_kv_count 1152921504606846976 is absurd for a file of 88 "
                    "bytes (each key/value takes at least 13 bytes; truncated?)");
  CHECK_THROWS_WITH(parse_owned(raw(std::numeric_limits<uint64_t>::max(), 0, Bytes(64, 0))),
                    Contains("tensor_count 18446744073709551615 is absurd for a file of 88 bytes"));
  // An array claiming 2^40 elements in a small file.
  Bytes arr;
  put_str(arr, "tokenizer.ggml.scores");
  put(arr, kArr, 4);
  put(arr, kU32, 4);
  put(arr, 1ull << 40, 8);
  append(arr, Bytes(16, 0));
  CHECK_THROWS_WITH(parse_owned(raw(0, 1, arr)),
                    Contains("metadata key 0 (\"tokenizer.ggml.scores\"): array of 1099511627776 "
                             "UINT32 elements cannot fit in the 16 bytes left in the file"));
}

TEST_CASE("GGUF tensor dims: too many, too large or overflowing are refused", "[gguf][errors]") {
  Writer w;
  w.tensor("w", {1, 1, 1, 1, 1, 1, 1, 1, 1}, T_F32, Bytes(4, 0));
  CHECK_THROWS_WITH(parse_owned(w.build()),
                    "model.gguf: tensor 0 (\"w\"): n_dims 9 is more than 8 (corrupt file?)");
  Writer big;
  big.tensor("w", {1ull << 63}, T_F32, {});
  CHECK_THROWS_WITH(
      parse_owned(big.build()),
      Contains("tensor 0 (\"w\"): dimension 0 is 9223372036854775808, beyond 64-bit"));
  Writer product;
  product.tensor("w", {1ull << 32, 1ull << 32}, T_F32, {});
  CHECK_THROWS_WITH(parse_owned(product.build()),
                    "model.gguf: tensor 0 (\"w\"): dimensions [4294967296, 4294967296] hold more "
                    "elements than 64-bit sizes allow");
  Writer bytes;  // 2^62 elements fit int64; 2^62 * 4 bytes do not fit 64 bits
  bytes.tensor("w", {1ull << 31, 1ull << 31}, T_F32, {});
  CHECK_THROWS_WITH(parse_owned(bytes.build()),
                    Contains("dimensions [2147483648, 2147483648] of type F32 take more bytes than "
                             "64-bit sizes allow"));
  Writer row;  // 48 values per row in 32-value blocks
  row.tensor("w", {48, 2}, T_Q4_0, Bytes(54, 0));
  CHECK_THROWS_WITH(parse_owned(row.build()),
                    "model.gguf: tensor 0 (\"w\"): rows of 48 elements (ne[0]) are not a multiple "
                    "of Q4_0's block of 32 elements");
  Writer kq;
  kq.tensor("w", {128}, T_Q6_K, Bytes(105, 0));
  CHECK_THROWS_WITH(parse_owned(kq.build()),
                    Contains("not a multiple of Q6_K's block of 256 elements"));
  Writer type;
  type.tensor("w", {4}, 99, Bytes(16, 0));
  CHECK_THROWS_WITH(parse_owned(type.build()),
                    Contains("tensor 0 (\"w\"): unknown ggml type 99 (supported: F32, F16, BF16"));
}

TEST_CASE("GGUF duplicate tensor names and metadata keys are refused", "[gguf][errors]") {
  Writer t;
  t.tensor("a", {4}, T_F32, Bytes(16, 0)).tensor("a", {4}, T_F32, Bytes(16, 0));
  CHECK_THROWS_WITH(parse_owned(t.build()),
                    "model.gguf: tensor 1 (\"a\"): duplicate tensor name: tensor 0 has the same "
                    "name");
  Writer k;
  k.kv("general.name", str("a")).kv("general.name", str("b"));
  CHECK_THROWS_WITH(parse_owned(k.build()),
                    "model.gguf: metadata key 1 (\"general.name\"): duplicate key: metadata key 0 "
                    "has the same name");
}

TEST_CASE("GGUF tensor offsets out of range, misaligned or overlapping are refused",
          "[gguf][errors]") {
  Writer w;
  w.tensor("blk.0.attn_q.weight", {4}, T_F32, Bytes(16, 0));
  w.tensors[0].offset = 4096;
  const Bytes far = w.build();
  const uint64_t start = Writer::pad(w.header().size(), 32);
  CHECK_THROWS_WITH(parse_owned(Bytes(far.begin(), far.begin() + long(start + 100))),
                    "model.gguf: tensor 0 (\"blk.0.attn_q.weight\"): data [" +
                        std::to_string(start + 4096) + ", " + std::to_string(start + 4112) +
                        ") ends past the file (" + std::to_string(start + 100) + " bytes)");
  Writer huge;
  huge.tensor("w", {4}, T_F32, Bytes(16, 0));
  huge.tensors[0].offset = std::numeric_limits<uint64_t>::max() - 31;
  Bytes hb = huge.header();
  hb.resize(Writer::pad(hb.size(), 32) + 16, 0);
  CHECK_THROWS_WITH(parse_owned(hb), Contains("lie beyond any file"));

  Writer mis;
  mis.tensor("w", {4}, T_F32, Bytes(16, 0));
  mis.tensors[0].offset = 4;
  CHECK_THROWS_WITH(parse_owned(mis.build()),
                    "model.gguf: tensor 0 (\"w\"): offset 4 is not a multiple of the alignment 32");

  Writer overlap;
  overlap.tensor("a", {16}, T_F32, Bytes(64, 0)).tensor("b", {4}, T_F32, Bytes(16, 0));
  overlap.tensors[1].offset = 32;  // inside a's 64 bytes
  Bytes ob = overlap.header();
  ob.resize(Writer::pad(ob.size(), 32) + 64, 0);
  CHECK_THROWS_WITH(parse_owned(ob), Contains("tensor 0 (\"a\") and tensor 1 (\"b\") overlap"));
}

TEST_CASE("GGUF unknown value types, bad bools, bad keys and deep arrays are refused",
          "[gguf][errors]") {
  Bytes unknown;
  put_str(unknown, "general.thing");
  put(unknown, 13, 4);
  append(unknown, Bytes(8, 0));
  CHECK_THROWS_WITH(parse_owned(raw(0, 1, unknown)),
                    "model.gguf: metadata key 0 (\"general.thing\"): unknown value type 13 (GGUF "
                    "defines 0..12)");
  Writer elem;
  Value bad{kArr, {}};
  put(bad.payload, 77, 4);
  put(bad.payload, 0, 8);
  elem.kv("a", bad);
  CHECK_THROWS_WITH(parse_owned(elem.build()), Contains("unknown array element type 77"));

  Bytes b;
  put_str(b, "flag");
  put(b, kBool, 4);
  put(b, 2, 1);
  CHECK_THROWS_WITH(parse_owned(raw(0, 1, b)),
                    "model.gguf: metadata key 0 (\"flag\"): bool value 2 is neither 0 nor 1");
  Writer in_array;
  Value bools{kArr, {}};
  put(bools.payload, kBool, 4);
  put(bools.payload, 3, 8);
  append(bools.payload, Bytes{0, 1, 5});
  in_array.kv("flags", bools);
  CHECK_THROWS_WITH(parse_owned(in_array.build()),
                    Contains("metadata key 0 (\"flags\"), element 2: bool value 5"));

  Writer key;
  key.kv("general.n\xFF\xFEme", str("x"));
  CHECK_THROWS_WITH(parse_owned(key.build()),
                    "model.gguf: metadata key 0: the key \"general.n\\xff\\xfeme\" is not valid "
                    "UTF-8 (at byte 9)");

  Value deep = array(kI32, {i32(1)});
  for (int i = 0; i < 40; ++i) deep = array(kArr, {deep});
  Writer d;
  d.kv("deep", deep);
  CHECK_THROWS_WITH(parse_owned(d.build()), Contains("arrays nested deeper than 16 levels"));
  Value ok = array(kI32, {i32(1)});
  for (int i = 0; i < 15; ++i) ok = array(kArr, {ok});
  Writer fine;
  fine.kv("nested", ok);
  CHECK_NOTHROW(parse_owned(fine.build()));
}

TEST_CASE("GGUF general.alignment must be a UINT32 power of two", "[gguf][errors]") {
  Writer w;
  w.kv("general.alignment", u32(48));
  CHECK_THROWS_WITH(parse_owned(w.build()),
                    "model.gguf: general.alignment 48 is not a power of two");
  Writer zero;
  zero.kv("general.alignment", u32(0));
  CHECK_THROWS_WITH(parse_owned(zero.build()),
                    Contains("general.alignment 0 is not a power of two"));
  Writer type;
  type.kv("general.alignment", u64(64));
  CHECK_THROWS_WITH(parse_owned(type.build()),
                    "model.gguf: metadata key \"general.alignment\" is UINT64, expected UINT32");
}

TEST_CASE("GGUF flipped header bytes give a message or a valid file, never a crash",
          "[gguf][errors]") {
  const Bytes full = tiny_model();
  const size_t header = tiny_model_writer().header().size();  // key/values and tensor infos
  size_t refused = 0;
  for (size_t i = 0; i < header; ++i)
    for (uint8_t flip : {uint8_t(0x01), uint8_t(0x80), uint8_t(0xFF)}) {
      Bytes b = full;
      b[i] ^= flip;
      try {
        const GgufFile f = parse_owned(b);
        for (const GgufTensorInfo& t : f.tensors()) {
          try {
            (void)f.read_tensor(t.name);
          } catch (const AtlasError&) {}
        }
      } catch (const AtlasError&) {
        ++refused;
      }
    }
  CHECK(refused > 0);
}

TEST_CASE("GGUF paths go through the input-file policy", "[gguf][errors]") {
  const auto dir = hf_test::fresh_dir("gguf-paths");
  CHECK_THROWS_WITH(GgufFile::open((dir / "missing.gguf").string()), Contains("no such file"));
  CHECK_THROWS_WITH(GgufFile::open(dir.string()), Contains("is a folder"));
  write_file(dir / "empty.gguf", {});
  CHECK_THROWS_WITH(GgufFile::open((dir / "empty.gguf").string()),
                    (dir / "empty.gguf").string() +
                        ": file is 0 bytes, too short for a GGUF file (truncated or empty)");
  std::filesystem::remove_all(dir);
}
