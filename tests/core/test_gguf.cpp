// GGUF reading: metadata, shapes, alignment and the dequantization of every supported ggml type.
// Every file is written byte by byte by tests/core/gguf_test_util.h; every expected value is
// worked out here from the format's definition (by hand, or by a naive loop over the values of
// a block that packs the chosen quants the way the layout describes), never by the reader.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "core/formats/gguf.h"
#include "core/tensor/error.h"
#include "tests/core/gguf_test_util.h"
#include "tests/core/hf_test_util.h"

using namespace atlas;
using namespace gguf_test;
using Catch::Contains;

namespace {

GgufFile parse_view(const Bytes& b) { return parse_gguf(b.data(), b.size(), "model.gguf"); }

// A file holding one tensor `t` of `type` with dims `ne`, read back as float32.
Tensor read_one(uint32_t type, std::vector<uint64_t> ne, const Bytes& data) {
  Writer w;
  w.kv("general.architecture", str("test")).tensor("t", std::move(ne), type, data);
  const Bytes file = w.build();
  return parse_view(file).read_tensor("t");
}

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Q4_K/Q5_K's 12 bytes of 6-bit scales and mins, packed as the format describes them: bytes 0-3
// hold scales 0-3 and bytes 4-7 mins 0-3 in their low 6 bits, with the top 2 bits of scales 4-7
// (bytes 0-3) and of mins 4-7 (bytes 4-7) in their high 2 bits; bytes 8-11 hold the low 4 bits
// of scale 4+i (low nibble) and of min 4+i (high nibble).
Bytes pack_k_scales(const int sc[8], const int mn[8]) {
  Bytes s(12, 0);
  for (int i = 0; i < 4; ++i) {
    s[size_t(i)] = uint8_t(sc[i] | ((sc[4 + i] >> 4) << 6));
    s[size_t(4 + i)] = uint8_t(mn[i] | ((mn[4 + i] >> 4) << 6));
    s[size_t(8 + i)] = uint8_t((sc[4 + i] & 15) | ((mn[4 + i] & 15) << 4));
  }
  return s;
}

const int kScales[8] = {1, 63, 17, 32, 45, 5, 60, 33};  // every high-bit pattern occurs
const int kMins[8] = {0, 12, 63, 1, 40, 2, 31, 48};

}  // namespace

TEST_CASE("GGUF metadata of every value type round-trips with its type", "[gguf]") {
  for (uint32_t version : {2u, 3u}) {
    Writer w;
    w.version = version;
    w.kv("u8", u8(200)).kv("i8", i8(-100)).kv("u16", u16(60000)).kv("i16", i16(-30000));
    w.kv("u32", u32(4000000000u)).kv("i32", i32(-2000000000)).kv("f32", f32(0.1f));
    w.kv("bool", boolean(true)).kv("str", str("h\xC3\xA9llo")).kv("u64", u64((1ull << 63) + 5));
    w.kv("i64", i64(-(1ll << 62))).kv("f64", f64(0.1));
    w.kv("a.u8", array(kU8, {u8(1), u8(2), u8(255)}));
    w.kv("a.i8", array(kI8, {i8(-1), i8(127)}));
    w.kv("a.u16", array(kU16, {u16(65535)})).kv("a.i16", array(kI16, {i16(-32768)}));
    w.kv("a.u32", array(kU32, {u32(7)})).kv("a.i32", array(kI32, {i32(-5), i32(6)}));
    w.kv("a.f32", array(kF32, {f32(1.5f), f32(-2.25f)}));
    w.kv("a.bool", array(kBool, {boolean(true), boolean(false), boolean(true)}));
    w.kv("a.str", strings({"a", "", "\xC3\xBC"}));
    w.kv("a.u64", array(kU64, {u64(std::numeric_limits<uint64_t>::max())}));
    w.kv("a.i64", array(kI64, {i64(std::numeric_limits<int64_t>::min())}));
    w.kv("a.f64", array(kF64, {f64(1e300)}));
    w.kv("a.nested", array(kArr, {array(kI32, {i32(1), i32(2)}), array(kI32, {i32(3)})}));
    w.kv("a.empty", array(kStr, {}));
    const Bytes file = w.build();
    const GgufFile f = parse_view(file);
    CHECK(f.version() == version);
    REQUIRE(f.metadata().size() == 26);
    CHECK(f.metadata()[0].key == "u8");  // file order is kept
    CHECK(f.metadata()[25].key == "a.empty");

    CHECK(f.find("u8")->type == GgufType::UInt8);
    CHECK(f.get_int("u8") == 200);
    CHECK(f.get_int("i8") == -100);
    CHECK(f.get_uint("u16") == 60000);
    CHECK(f.get_int("i16") == -30000);
    CHECK(f.get_uint("u32") == 4000000000u);
    CHECK(f.find("u32")->type == GgufType::UInt32);
    CHECK(f.get_int("i32") == -2000000000);
    CHECK(f.get_float("f32") == double(0.1f));  // the float32 value exactly, not 0.1
    CHECK(f.find("f32")->type == GgufType::Float32);
    CHECK(f.get_bool("bool"));
    CHECK(f.get_string("str") == "h\xC3\xA9llo");
    CHECK(f.get_uint("u64") == (1ull << 63) + 5);
    CHECK(f.get_int("i64") == -(1ll << 62));
    CHECK(f.get_float("f64") == 0.1);
    CHECK(f.find("f64")->type == GgufType::Float64);

    CHECK(f.get_int_array("a.u8") == std::vector<int64_t>{1, 2, 255});
    CHECK(f.get_array("a.u8").type == GgufType::UInt8);
    CHECK(f.get_int_array("a.i8") == std::vector<int64_t>{-1, 127});
    CHECK(f.get_int_array("a.u16") == std::vector<int64_t>{65535});
    CHECK(f.get_int_array("a.i16") == std::vector<int64_t>{-32768});
    CHECK(f.get_int_array("a.u32") == std::vector<int64_t>{7});
    CHECK(f.get_int_array("a.i32") == std::vector<int64_t>{-5, 6});
    CHECK(f.get_float_array("a.f32") == std::vector<double>{1.5, -2.25});
    CHECK(std::get<std::vector<bool>>(f.get_array("a.bool").items) ==
          std::vector<bool>{true, false, true});
    CHECK(f.get_string_array("a.str") == std::vector<std::string>{"a", "", "\xC3\xBC"});
    CHECK(std::get<std::vector<uint64_t>>(f.get_array("a.u64").items)[0] ==
          std::numeric_limits<uint64_t>::max());
    CHECK(f.get_int_array("a.i64") == std::vector<int64_t>{std::numeric_limits<int64_t>::min()});
    CHECK(f.get_float_array("a.f64") == std::vector<double>{1e300});
    const GgufArray& nested = f.get_array("a.nested");
    CHECK(nested.type == GgufType::Array);
    const auto& inner = std::get<std::vector<GgufArray>>(nested.items);
    REQUIRE(inner.size() == 2);
    CHECK(inner[0].type == GgufType::Int32);
    CHECK(std::get<std::vector<int64_t>>(inner[0].items) == std::vector<int64_t>{1, 2});
    CHECK(std::get<std::vector<int64_t>>(inner[1].items) == std::vector<int64_t>{3});
    CHECK(f.get_array("a.empty").size() == 0);
    CHECK(f.get_array("a.empty").type == GgufType::String);
  }
}

TEST_CASE("GGUF typed getters name the key when it is missing or of another type", "[gguf]") {
  Writer w;
  w.kv("general.architecture", str("llama")).kv("n", i32(-3)).kv("big", u64(1ull << 63));
  w.kv("tokens", strings({"a"}));
  const Bytes file = w.build();
  const GgufFile f = parse_view(file);
  CHECK_THROWS_WITH(f.get_int("llama.block_count"),
                    "model.gguf: metadata key \"llama.block_count\" is missing");
  CHECK_THROWS_WITH(f.get_int("general.architecture"),
                    "model.gguf: metadata key \"general.architecture\" is STRING, expected an "
                    "integer");
  CHECK_THROWS_WITH(f.get_string("n"), "model.gguf: metadata key \"n\" is INT32, expected STRING");
  CHECK_THROWS_WITH(f.get_uint("n"), Contains("is -3, expected a non-negative integer"));
  CHECK_THROWS_WITH(f.get_int("big"), Contains("beyond 64-bit signed integers"));
  CHECK_THROWS_WITH(f.get_float("n"), Contains("is INT32, expected FLOAT32 or FLOAT64"));
  CHECK_THROWS_WITH(f.get_bool("n"), Contains("expected BOOL"));
  CHECK_THROWS_WITH(f.get_int_array("tokens"),
                    "model.gguf: metadata key \"tokens\" is ARRAY of STRING, expected an ARRAY "
                    "of integers");
  CHECK_THROWS_WITH(f.get_string_array("n"), Contains("expected an ARRAY of STRING"));
  CHECK(f.get_int_or("llama.block_count", 7) == 7);
  CHECK(f.get_string_or("general.architecture", "x") == "llama");
  CHECK_THROWS_WITH(f.get_int_or("general.architecture", 7), Contains("is STRING"));
  CHECK_THROWS_WITH(f.tensor("nope"), "model.gguf: no tensor \"nope\" (the file has 0 tensors)");
}

TEST_CASE("GGUF shapes are the file's dims reversed and data stays in C order", "[gguf]") {
  Bytes data;
  for (int i = 0; i < 24; ++i) put_f32(data, float(i));
  Writer w;
  w.tensor("t", {4, 3, 2}, T_F32, data);  // ne[0] = 4 varies fastest
  const Bytes file = w.build();
  const GgufFile f = parse_view(file);
  const GgufTensorInfo& info = f.tensor("t");
  CHECK(info.shape == Shape{2, 3, 4});
  CHECK(info.ne == std::vector<int64_t>{4, 3, 2});
  CHECK(info.type_name == "F32");
  CHECK(info.n_bytes == 96);
  CHECK(info.numel == 24);
  const Tensor t = f.read_tensor("t");
  CHECK(t.shape == Shape{2, 3, 4});
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 3; ++b)
      for (int c = 0; c < 4; ++c)
        CHECK(t.data[size_t(a * 12 + b * 4 + c)] == float(a * 12 + b * 4 + c));
}

TEST_CASE("GGUF F32, F16 and BF16 tensors read exactly", "[gguf]") {
  Bytes f32data;
  const float f32v[4] = {1.0f, -0.0f, 3.4028235e38f, 1e-45f};
  for (float v : f32v) put_f32(f32data, v);
  const Tensor a = read_one(T_F32, {4}, f32data);
  for (int i = 0; i < 4; ++i) CHECK(bits(a.data[size_t(i)]) == bits(f32v[i]));

  // 1, -2, 65504 (largest half), 2^-24 (smallest subnormal), -0, +inf, 1/3 rounded to half.
  const uint16_t h[7] = {0x3C00, 0xC000, 0x7BFF, 0x0001, 0x8000, 0x7C00, 0x3555};
  Bytes f16data;
  for (uint16_t v : h) put(f16data, v, 2);
  const Tensor b = read_one(T_F16, {7}, f16data);
  CHECK(b.data[0] == 1.0f);
  CHECK(b.data[1] == -2.0f);
  CHECK(b.data[2] == 65504.0f);
  CHECK(b.data[3] == std::ldexp(1.0f, -24));
  CHECK(bits(b.data[4]) == 0x80000000u);
  CHECK(b.data[5] == std::numeric_limits<float>::infinity());
  CHECK(b.data[6] == 0.333251953125f);  // (1 + 341/1024) / 4

  // bfloat16 is the top half of a float32: 1, -3, largest finite, smallest subnormal, -inf.
  const uint16_t bf[5] = {0x3F80, 0xC040, 0x7F7F, 0x0001, 0xFF80};
  Bytes bfdata;
  for (uint16_t v : bf) put(bfdata, v, 2);
  const Tensor c = read_one(T_BF16, {5}, bfdata);
  for (int i = 0; i < 5; ++i) CHECK(bits(c.data[size_t(i)]) == uint32_t(bf[i]) << 16);
  CHECK(c.data[1] == -3.0f);
}

TEST_CASE("GGUF Q8_0 blocks are d times a signed byte", "[gguf]") {
  Bytes blk;
  put(blk, kHalfQuarter, 2);  // d = 0.25
  for (int i = 0; i < 32; ++i) put(blk, uint8_t(int8_t(i * 8 - 128)), 1);
  const Tensor t = read_one(T_Q8_0, {32}, blk);
  CHECK(t.data[0] == -32.0f);  // -128 * 0.25
  CHECK(t.data[31] == 30.0f);  // 120 * 0.25
  for (int i = 0; i < 32; ++i) CHECK(t.data[size_t(i)] == float(i * 8 - 128) * 0.25f);
}

TEST_CASE("GGUF Q4_0 blocks are (nibble - 8) times d, low nibbles first", "[gguf]") {
  int q[32];
  for (int e = 0; e < 32; ++e) q[e] = (e * 7 + 3) % 16;
  Bytes blk;
  put(blk, kHalfHalf, 2);  // d = 0.5
  for (int j = 0; j < 16; ++j) put(blk, uint8_t(q[j] | (q[j + 16] << 4)), 1);
  const Tensor t = read_one(T_Q4_0, {32}, blk);
  CHECK(t.data[0] == -2.5f);   // q = 3: (3 - 8) * 0.5
  CHECK(t.data[1] == 1.0f);    // q = 10
  CHECK(t.data[18] == -3.5f);  // q = 129 % 16 = 1, from the high nibble of byte 2
  for (int e = 0; e < 32; ++e) CHECK(t.data[size_t(e)] == float(q[e] - 8) * 0.5f);
}

TEST_CASE("GGUF Q4_1 blocks are nibble times d plus m", "[gguf]") {
  int q[32];
  for (int e = 0; e < 32; ++e) q[e] = (e * 5 + 1) % 16;
  Bytes blk;
  put(blk, kHalfQuarter, 2);  // d = 0.25
  put(blk, kHalfMinus3, 2);   // m = -3
  for (int j = 0; j < 16; ++j) put(blk, uint8_t(q[j] | (q[j + 16] << 4)), 1);
  const Tensor t = read_one(T_Q4_1, {32}, blk);
  CHECK(t.data[0] == -2.75f);  // q = 1: 0.25 - 3
  for (int e = 0; e < 32; ++e) CHECK(t.data[size_t(e)] == float(q[e]) * 0.25f - 3.0f);
}

TEST_CASE("GGUF Q5_0 and Q5_1 take the fifth bit from the 32-bit high word", "[gguf]") {
  int q[32];
  for (int e = 0; e < 32; ++e) q[e] = (e * 11 + 5) % 32;
  Bytes nibbles;
  uint32_t high = 0;
  for (int j = 0; j < 16; ++j) nibbles.push_back(uint8_t((q[j] & 15) | ((q[j + 16] & 15) << 4)));
  for (int e = 0; e < 32; ++e) high |= uint32_t(q[e] >> 4) << e;  // bit e: value e's fifth bit
  Bytes b0;
  put(b0, kHalfHalf, 2);  // d = 0.5
  put(b0, high, 4);
  append(b0, nibbles);
  const Tensor t0 = read_one(T_Q5_0, {32}, b0);
  CHECK(t0.data[0] == -5.5f);  // q = 5: (5 - 16) * 0.5
  CHECK(t0.data[1] == 0.0f);   // q = 16
  for (int e = 0; e < 32; ++e) CHECK(t0.data[size_t(e)] == float(q[e] - 16) * 0.5f);

  Bytes b1;
  put(b1, kHalfQuarter, 2);  // d = 0.25
  put(b1, kHalfOne, 2);      // m = 1
  put(b1, high, 4);
  append(b1, nibbles);
  const Tensor t1 = read_one(T_Q5_1, {32}, b1);
  CHECK(t1.data[1] == 5.0f);  // q = 16: 16 * 0.25 + 1
  for (int e = 0; e < 32; ++e) CHECK(t1.data[size_t(e)] == float(q[e]) * 0.25f + 1.0f);
}

TEST_CASE("GGUF Q4_K super-blocks use 6-bit scales and mins per 32 values", "[gguf]") {
  int q[256];
  for (int e = 0; e < 256; ++e) q[e] = (e * 5 + e / 7) % 16;
  Bytes blk;
  put(blk, kHalfHalf, 2);     // d = 0.5
  put(blk, kHalfQuarter, 2);  // dmin = 0.25
  append(blk, pack_k_scales(kScales, kMins));
  Bytes qs(128,
           0);  // value e: sub-block s = e / 32; byte 32 (s / 2) + e % 32, high nibble if s odd
  for (int e = 0; e < 256; ++e) {
    const int s = e / 32;
    qs[size_t(32 * (s / 2) + e % 32)] |= uint8_t(q[e] << (4 * (s % 2)));
  }
  append(blk, qs);
  REQUIRE(blk.size() == 144);
  const Tensor t = read_one(T_Q4_K, {256}, blk);
  CHECK(t.data[40] == 406.5f);    // s 1: 0.5 * 63 * 13 - 0.25 * 12
  CHECK(t.data[200] == 112.25f);  // s 6: 0.5 * 60 * 4 - 0.25 * 31
  for (int e = 0; e < 256; ++e) {
    const int s = e / 32;
    CHECK(t.data[size_t(e)] == 0.5f * float(kScales[s]) * float(q[e]) - 0.25f * float(kMins[s]));
  }
}

TEST_CASE("GGUF Q5_K super-blocks add a fifth bit per value to Q4_K's layout", "[gguf]") {
  int q[256];
  for (int e = 0; e < 256; ++e) q[e] = (e * 3 + e / 5) % 32;
  Bytes blk;
  put(blk, kHalfOne, 2);   // d = 1
  put(blk, kHalfHalf, 2);  // dmin = 0.5
  append(blk, pack_k_scales(kScales, kMins));
  Bytes qh(32, 0), qs(128, 0);  // fifth bit of value e: bit (e / 32) of byte e % 32
  for (int e = 0; e < 256; ++e) {
    const int s = e / 32;
    qs[size_t(32 * (s / 2) + e % 32)] |= uint8_t((q[e] & 15) << (4 * (s % 2)));
    qh[size_t(e % 32)] |= uint8_t((q[e] >> 4) << s);
  }
  append(blk, qh);
  append(blk, qs);
  REQUIRE(blk.size() == 176);
  const Tensor t = read_one(T_Q5_K, {256}, blk);
  CHECK(t.data[255] == 504.0f);  // s 7, q = 816 % 32 = 16 (fifth bit only): 33 * 16 - 0.5 * 48
  for (int e = 0; e < 256; ++e) {
    const int s = e / 32;
    CHECK(t.data[size_t(e)] == float(kScales[s]) * float(q[e]) - 0.5f * float(kMins[s]));
  }
}

TEST_CASE("GGUF Q6_K super-blocks: 6-bit quants centred on 32, int8 scales per 16", "[gguf]") {
  const int sc[16] = {1, -2, 3, -4, 5, -6, 7, -8, 127, -128, 10, -10, 50, -50, 99, -1};
  int q[256];
  for (int e = 0; e < 256; ++e) q[e] = (e * 13 + 7) % 64;
  // Value e lies in half n = e / 128, group g = (e % 128) / 32, lane l = e % 32: its low 4 bits
  // in byte 64 n + 32 (g % 2) + l of ql (high nibble for g >= 2), its top 2 bits at bits 2g of
  // byte 32 n + l of qh.
  Bytes ql(128, 0), qh(64, 0);
  for (int e = 0; e < 256; ++e) {
    const int n = e / 128, g = (e % 128) / 32, l = e % 32;
    ql[size_t(64 * n + 32 * (g % 2) + l)] |= uint8_t((q[e] & 15) << (4 * (g / 2)));
    qh[size_t(32 * n + l)] |= uint8_t((q[e] >> 4) << (2 * g));
  }
  Bytes blk = ql;
  append(blk, qh);
  for (int s : sc) put(blk, uint8_t(int8_t(s)), 1);
  put(blk, kHalfQuarter, 2);  // d = 0.25, stored last
  REQUIRE(blk.size() == 210);
  const Tensor t = read_one(T_Q6_K, {256}, blk);
  CHECK(t.data[130] == 31.75f);  // q = 33, scale 8 = 127: 0.25 * 127 * 1
  CHECK(t.data[255] == -6.5f);   // q = 58, scale 15 = -1: 0.25 * -1 * 26
  for (int e = 0; e < 256; ++e)
    CHECK(t.data[size_t(e)] == 0.25f * float(sc[e / 16]) * float(q[e] - 32));
}

TEST_CASE("GGUF quantized rows of several blocks are laid out block after block", "[gguf]") {
  // Q4_0 [3 rows, 64 columns]: 6 blocks, block k with d = k + 1 and every nibble k + 9.
  Bytes data;
  for (int k = 0; k < 6; ++k) {
    const uint16_t d[6] = {0x3C00, 0x4000, 0x4200, 0x4400, 0x4500, 0x4600};  // 1 .. 6
    put(data, d[k], 2);
    for (int j = 0; j < 16; ++j) put(data, uint8_t((k + 9) | ((k + 9) << 4)), 1);
  }
  const Tensor t = read_one(T_Q4_0, {64, 3}, data);
  REQUIRE(t.shape == Shape{3, 64});
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 64; ++c) {
      const int k = r * 2 + c / 32;
      CHECK(t.data[size_t(r * 64 + c)] == float(k + 1) * float(k + 1));  // (k + 9 - 8) * d
    }
}

TEST_CASE("GGUF dequantization in parallel covers every block of a large tensor", "[gguf]") {
  const int blocks = 4096;  // 131072 values: above the threshold for the thread pool
  const uint16_t d[4] = {kHalfHalf, kHalfQuarter, kHalfOne, kHalfTwo};
  const float dv[4] = {0.5f, 0.25f, 1.0f, 2.0f};
  Bytes data;
  for (int k = 0; k < blocks; ++k) {
    put(data, d[k % 4], 2);
    for (int i = 0; i < 32; ++i) put(data, uint8_t((k * 7 + i * 3) % 256), 1);
  }
  const Tensor t = read_one(T_Q8_0, {32 * blocks}, data);
  size_t wrong = 0;
  for (int k = 0; k < blocks; ++k)
    for (int i = 0; i < 32; ++i)
      if (t.data[size_t(k * 32 + i)] != float(int8_t(uint8_t((k * 7 + i * 3) % 256))) * dv[k % 4])
        ++wrong;
  CHECK(wrong == 0);
}

TEST_CASE("GGUF general.alignment other than 32 places the data section and offsets", "[gguf]") {
  Writer w;
  w.alignment = 64;
  w.kv("general.alignment", u32(64));
  Bytes a, b;
  for (int i = 0; i < 3; ++i) put_f32(a, float(i + 1));
  for (int i = 0; i < 2; ++i) put_f32(b, float(-i - 7));
  w.tensor("a", {3}, T_F32, a).tensor("b", {2}, T_F32, b);  // b at offset 64, not 32
  // Pad the header so that rounding it up to 32 and to 64 differ: a reader that ignored the
  // alignment would read zeros from the padding.
  std::string pad;
  while (Writer::pad(w.header().size(), 64) == Writer::pad(w.header().size(), 32)) {
    pad += 'x';
    w.kvs.resize(1);
    w.kv("pad", str(pad));
  }
  const Bytes file = w.build();
  const GgufFile f = parse_view(file);
  CHECK(f.alignment() == 64);
  CHECK(f.data_offset() % 64 == 0);
  CHECK(f.data_offset() == Writer::pad(w.header().size(), 64));
  CHECK(f.tensor("b").offset == f.data_offset() + 64);
  CHECK(f.read_tensor("a").data == std::vector<float>{1.0f, 2.0f, 3.0f});
  CHECK(f.read_tensor("b").data == std::vector<float>{-7.0f, -8.0f});
}

TEST_CASE("GGUF files are memory-mapped from disk and list every tensor", "[gguf]") {
  const auto dir = hf_test::fresh_dir("gguf-open");
  write_file(dir / "tiny.gguf", tiny_model());
  const GgufFile f = GgufFile::open((dir / "tiny.gguf").string());
  CHECK(f.get_string("general.architecture") == "llama");
  CHECK(f.get_float("llama.rope.freq_base") == 10000.0);
  CHECK(f.get_string_array("tokenizer.ggml.tokens").size() == 12);
  REQUIRE(f.tensors().size() == 3);
  CHECK(f.tensors()[0].name == "output_norm.weight");
  CHECK(f.tensors()[2].type_name == "Q2_K");
  CHECK(f.tensors()[2].n_bytes == 84);
  CHECK(f.read_tensor("output_norm.weight").data ==
        std::vector<float>{-2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f});
  const Tensor e = f.read_tensor("token_embd.weight");
  CHECK(e.shape == Shape{1, 32});
  CHECK(e.data[0] == -8.0f);  // q = -16, d = 0.5
  // Listed, but not dequantized: refused by name with the supported list.
  CHECK_THROWS_WITH(f.read_tensor("blk.0.ffn_down.weight"),
                    (dir / "tiny.gguf").string() +
                        ": tensor \"blk.0.ffn_down.weight\" has ggml type Q2_K (10), which is "
                        "not supported; supported: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, "
                        "Q4_K, Q5_K, Q6_K");
  std::filesystem::remove_all(dir);
}
