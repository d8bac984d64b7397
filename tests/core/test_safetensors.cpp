// safetensors reading and writing. Every input file here is assembled byte by byte from a
// hand-written JSON header and hand-written little-endian data, never by the writer under test.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>

#include "core/tensor/error.h"
#include "core/formats/safetensors.h"
#include "tests/core/temp_dir.h"

using namespace atlas;
using atlas::test::TempDir;
using Catch::Contains;
using Bytes = std::vector<uint8_t>;

namespace {

// 8-byte little-endian header length, the header text, then the data buffer.
Bytes st_file(const std::string& header, const Bytes& data = {}) {
  Bytes out;
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out.push_back(uint8_t(n >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

SafetensorsFile parse_bytes(const Bytes& b, const std::string& origin = "test.safetensors") {
  return parse_safetensors(b.data(), b.size(), origin);
}

std::string single(const std::string& dtype, const std::string& shape, int begin, int end) {
  return R"({"t":{"dtype":")" + dtype + R"(","shape":)" + shape + R"(,"data_offsets":[)" +
         std::to_string(begin) + "," + std::to_string(end) + "]}}";
}

void write_bytes(const std::string& path, const Bytes& b) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}

uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

}  // namespace

TEST_CASE("safetensors parses a hand-written file with F32 and F16 tensors and metadata") {
  // "a": F32 [2, 2] = 1, 2, -1.5, 0.5 at [0, 16); "b": F16 [3] = 1, -2, 65504 at [16, 22).
  const std::string header =
      R"({"__metadata__":{"format":"pt","note":"hi"},)"
      R"("b":{"dtype":"F16","shape":[3],"data_offsets":[16,22]},)"
      R"("a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})";
  const Bytes data = {0x00, 0x00, 0x80, 0x3F, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0xC0,
                      0xBF, 0x00, 0x00, 0x00, 0x3F, 0x00, 0x3C, 0x00, 0xC0, 0xFF, 0x7B};
  SafetensorsFile f = parse_bytes(st_file(header, data));
  REQUIRE(f.tensors.size() == 2);
  CHECK(f.tensors.at("a").shape == Shape{2, 2});
  CHECK(f.tensors.at("a").data == std::vector<float>{1.0f, 2.0f, -1.5f, 0.5f});
  CHECK(f.tensors.at("b").shape == Shape{3});
  CHECK(f.tensors.at("b").data == std::vector<float>{1.0f, -2.0f, 65504.0f});
  CHECK(f.source_dtype.at("a") == "F32");
  CHECK(f.source_dtype.at("b") == "F16");
  CHECK(f.metadata == std::map<std::string, std::string>{{"format", "pt"}, {"note", "hi"}});
}

TEST_CASE("safetensors accepts a space-padded header, empty files and zero-size tensors") {
  SafetensorsFile f =
      parse_bytes(st_file(single("F32", "[1]", 0, 4) + "      ", {0, 0, 0x80, 0x3F}));
  CHECK(f.tensors.at("t").data == std::vector<float>{1.0f});
  CHECK(f.metadata.empty());

  CHECK(parse_bytes(st_file("{}")).tensors.empty());
  CHECK(parse_bytes(st_file("{}        ")).tensors.empty());

  // A zero-size tensor sits at the same offset as its neighbour without overlapping it.
  SafetensorsFile z = parse_bytes(st_file(
      R"({"e":{"dtype":"F32","shape":[0,7],"data_offsets":[0,0]},)"
      R"("s":{"dtype":"F32","shape":[],"data_offsets":[0,4]}})",
      {0, 0, 0, 0x40}));
  CHECK(z.tensors.at("e").shape == Shape{0, 7});
  CHECK(z.tensors.at("e").data.empty());
  CHECK(z.tensors.at("s").shape.empty());  // 0-d scalar
  CHECK(z.tensors.at("s").data == std::vector<float>{2.0f});
}

TEST_CASE("half_to_float converts normals, subnormals, zeros, infinities and NaN exactly") {
  CHECK(half_to_float(0x3C00) == 1.0f);
  CHECK(half_to_float(0xC000) == -2.0f);
  CHECK(half_to_float(0x7BFF) == 65504.0f);               // largest finite half
  CHECK(half_to_float(0x3555) == 0.333251953125f);        // (1 + 341/1024) / 4
  CHECK(half_to_float(0x0400) == std::ldexp(1.0f, -14));  // smallest normal
  CHECK(half_to_float(0x0001) == std::ldexp(1.0f, -24));  // smallest subnormal
  CHECK(half_to_float(0x0002) == std::ldexp(1.0f, -23));
  CHECK(half_to_float(0x03FF) == std::ldexp(1023.0f, -24));  // largest subnormal
  CHECK(half_to_float(0x8001) == -std::ldexp(1.0f, -24));
  CHECK(float_bits(half_to_float(0x0000)) == 0x00000000u);
  CHECK(float_bits(half_to_float(0x8000)) == 0x80000000u);  // -0 keeps its sign
  CHECK(half_to_float(0x7C00) == std::numeric_limits<float>::infinity());
  CHECK(half_to_float(0xFC00) == -std::numeric_limits<float>::infinity());
  CHECK(std::isnan(half_to_float(0x7E00)));
  CHECK(std::isnan(half_to_float(0x7C01)));  // smallest-payload NaN is not infinity
}

TEST_CASE("bf16_to_float is the upper half of a float32") {
  CHECK(bf16_to_float(0x3F80) == 1.0f);
  CHECK(bf16_to_float(0xC000) == -2.0f);
  CHECK(bf16_to_float(0x4049) == 3.140625f);
  CHECK(bf16_to_float(0x0001) == std::ldexp(1.0f, -133));  // smallest subnormal
  CHECK(bf16_to_float(0x7F80) == std::numeric_limits<float>::infinity());
  CHECK(std::isnan(bf16_to_float(0x7FC0)));
  CHECK(float_bits(bf16_to_float(0x8000)) == 0x80000000u);
}

TEST_CASE("safetensors converts every integer and float dtype to float32") {
  struct Case {
    std::string dtype;
    Bytes bytes;
    std::vector<float> expected;
  };
  const std::vector<Case> cases = {
      {"BF16", {0x80, 0x3F, 0x00, 0xC0}, {1.0f, -2.0f}},
      {"F16", {0x01, 0x00, 0x00, 0x7C}, {std::ldexp(1.0f, -24), INFINITY}},
      {"F64", {0, 0, 0, 0, 0, 0, 0xF8, 0x3F, 0, 0, 0, 0, 0, 0, 0xF0, 0xBF}, {1.5f, -1.0f}},
      {"I64", {0xFD, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x10, 0, 0, 0, 0, 0, 0, 0},
       {-3.0f, 16.0f}},
      {"I32", {0xFE, 0xFF, 0xFF, 0xFF, 0x00, 0x01, 0x00, 0x00}, {-2.0f, 256.0f}},
      {"I16", {0xFF, 0xFF, 0x34, 0x12}, {-1.0f, 4660.0f}},
      {"I8", {0x80, 0x7F}, {-128.0f, 127.0f}},
      {"U8", {0xFF, 0x00}, {255.0f, 0.0f}},
      {"U16", {0xFF, 0xFF, 0x00, 0x01}, {65535.0f, 256.0f}},
      {"U32", {0x00, 0x00, 0x01, 0x00, 0x05, 0, 0, 0}, {65536.0f, 5.0f}},
      {"U64", {0, 0, 0, 0, 0, 0, 0, 0x80, 0x07, 0, 0, 0, 0, 0, 0, 0}, {std::ldexp(1.0f, 63), 7.0f}},
      {"BOOL", {0x02, 0x00}, {1.0f, 0.0f}},  // any nonzero byte is true, as in C++/numpy
  };
  for (const Case& c : cases) {
    INFO("dtype " << c.dtype);
    SafetensorsFile f =
        parse_bytes(st_file(single(c.dtype, "[2]", 0, int(c.bytes.size())), c.bytes));
    CHECK(f.tensors.at("t").data == c.expected);
    CHECK(f.source_dtype.at("t") == c.dtype);
  }
}

TEST_CASE("safetensors narrows F64 beyond float range to infinity, not undefined behaviour") {
  // 1e300 = 0x7E37E43C8800759C, -1e300 the same with the sign bit.
  SafetensorsFile f = parse_bytes(st_file(single("F64", "[2]", 0, 16),
                                    {0x9C, 0x75, 0x00, 0x88, 0x3C, 0xE4, 0x37, 0x7E, 0x9C, 0x75,
                                     0x00, 0x88, 0x3C, 0xE4, 0x37, 0xFE}));
  CHECK(f.tensors.at("t").data[0] == std::numeric_limits<float>::infinity());
  CHECK(f.tensors.at("t").data[1] == -std::numeric_limits<float>::infinity());
}

TEST_CASE("safetensors rejects malformed framing with a message naming the problem") {
  CHECK_THROWS_WITH(parse_bytes(Bytes{1, 2, 3}, "m.safetensors"),
                    Contains("m.safetensors") && Contains("too short"));
  CHECK_THROWS_WITH(parse_bytes(Bytes{}), Contains("too short"));

  Bytes big = st_file("{}");
  big[0] = 0x40;  // claims a 64-byte header but only 2 bytes follow
  CHECK_THROWS_WITH(parse_bytes(big), Contains("larger than the file"));

  Bytes huge = {0x00, 0xE2, 0xF5, 0x05, 0, 0, 0, 0};  // 100'000'256 bytes
  CHECK_THROWS_WITH(parse_bytes(huge), Contains("100 MB"));

  Bytes max = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, '{', '}'};  // no wrap-around
  CHECK_THROWS_WITH(parse_bytes(max), Contains("100 MB"));

  CHECK_THROWS_WITH(parse_bytes(st_file("{\"t\":")), Contains("not valid JSON"));
  // nlohmann reports number overflow as out_of_range, not parse_error: still a clean error.
  CHECK_THROWS_WITH(parse_bytes(st_file(single("F32", "[1e400]", 0, 4), Bytes(4))),
                    Contains("not valid JSON"));
  CHECK_THROWS_WITH(parse_bytes(st_file("{\"t\":\"\xff\"}")), Contains("not valid JSON"));
  CHECK_THROWS_WITH(parse_bytes(st_file("[1, 2]")), Contains("not a JSON object"));
  CHECK_THROWS_WITH(parse_bytes(st_file("\"x\"")), Contains("not a JSON object"));
}

TEST_CASE("safetensors rejects bad header entries, naming tensor and problem") {
  CHECK_THROWS_WITH(parse_bytes(st_file(R"({"w":{"shape":[1],"data_offsets":[0,4]}})", Bytes(4))),
                    Contains("tensor w") && Contains("\"dtype\""));
  CHECK_THROWS_WITH(parse_bytes(st_file(R"({"w":{"dtype":"F32","data_offsets":[0,4]}})", Bytes(4))),
                    Contains("tensor w") && Contains("\"shape\""));
  CHECK_THROWS_WITH(parse_bytes(st_file(R"({"w":{"dtype":"F32","shape":[1]}})", Bytes(4))),
                    Contains("tensor w") && Contains("\"data_offsets\""));
  CHECK_THROWS_WITH(parse_bytes(st_file(R"({"w":[1,2]})")), Contains("tensor w") &&
                                                          Contains("expected an object"));
  CHECK_THROWS_WITH(parse_bytes(st_file(single("F8_E4M3", "[4]", 0, 4), Bytes(4))),
                    Contains("tensor t") && Contains("unsupported dtype \"F8_E4M3\""));
  CHECK_THROWS_WITH(parse_bytes(st_file(R"({"w":{"dtype":3,"shape":[1],"data_offsets":[0,4]}})")),
                    Contains("\"dtype\" is not a string"));
  CHECK_THROWS_WITH(parse_bytes(st_file(single("F32", "[2,-3]", 0, 4), Bytes(4))),
                    Contains("shape dimension 1 is negative (-3)"));
  CHECK_THROWS_WITH(parse_bytes(st_file(single("F32", "[2.5]", 0, 4), Bytes(4))),
                    Contains("not an integer"));
  CHECK_THROWS_WITH(parse_bytes(st_file(single("F32", "[\"2\"]", 0, 4), Bytes(4))),
                    Contains("expected an integer"));
  CHECK_THROWS_WITH(parse_bytes(st_file(single("F32", "3", 0, 4), Bytes(4))),
                    Contains("\"shape\" is not an array"));
  CHECK_THROWS_WITH(
      parse_bytes(st_file(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", Bytes(4))),
      Contains("[begin, end]"));
  CHECK_THROWS_WITH(
      parse_bytes(st_file(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,-4]}})", Bytes(4))),
      Contains("data_offsets end is negative"));
  CHECK_THROWS_WITH(parse_bytes(st_file(R"({"__metadata__":{"k":1}})")),
                    Contains("__metadata__") && Contains("expected a string"));
  CHECK_THROWS_WITH(parse_bytes(st_file(R"({"__metadata__":[]})")),
                    Contains("__metadata__ must be an object") && Contains("array"));
}

TEST_CASE("safetensors rejects absurd shapes cleanly instead of allocating") {
  // 2^40 x 2^40 elements overflows int64: must be an AtlasError, not bad_alloc or a crash.
  CHECK_THROWS_WITH(
      parse_bytes(st_file(single("F32", "[1099511627776,1099511627776]", 0, 4), Bytes(4))),
      Contains("tensor t") && Contains("overflows"));
  // Fits int64 as an element count but not once multiplied by the item size.
  CHECK_THROWS_WITH(parse_bytes(st_file(single("F64", "[4611686018427387904]", 0, 8), Bytes(8))),
                    Contains("overflows"));
  // Larger than int64 as a single dimension.
  CHECK_THROWS_WITH(parse_bytes(st_file(single("F32", "[18446744073709551615]", 0, 4), Bytes(4))),
                    Contains("absurdly large"));
  // A zero dim does not excuse an overflowing product of the others.
  CHECK_THROWS_WITH(parse_bytes(st_file(single("F32", "[4294967296,4294967296,0]", 0, 0))),
                    Contains("overflows"));
  // A plausible count the file does not actually contain.
  CHECK_THROWS_WITH(parse_bytes(st_file(single("F32", "[1000000000]", 0, 4), Bytes(4))),
                    Contains("has 4 bytes, dtype F32 shape [1000000000] needs 4000000000"));
}

TEST_CASE("safetensors rejects offsets that do not tile the data buffer") {
  CHECK_THROWS_WITH(parse_bytes(st_file(single("F32", "[2]", 0, 8), Bytes(4))),
                    Contains("tensor t") && Contains("out of range"));
  CHECK_THROWS_WITH(parse_bytes(st_file(single("F32", "[1]", 8, 4), Bytes(8))),
                    Contains("end before begin"));

  const std::string overlap =
      R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})";
  CHECK_THROWS_WITH(parse_bytes(st_file(overlap, Bytes(12))),
                    Contains("overlap") && Contains("tensor a") && Contains("tensor b"));

  const std::string hole =
      R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
      R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})";
  CHECK_THROWS_WITH(parse_bytes(st_file(hole, Bytes(12))), Contains("hole") && Contains("[4, 8)"));
  CHECK_THROWS_WITH(parse_bytes(st_file(single("F32", "[1]", 4, 8), Bytes(8))), Contains("hole"));

  CHECK_THROWS_WITH(parse_bytes(st_file(single("F32", "[1]", 0, 4), Bytes(6))),
                    Contains("trailing garbage") && Contains("2 bytes"));
  CHECK_THROWS_WITH(parse_bytes(st_file("{}", Bytes(1))), Contains("trailing garbage"));
}

TEST_CASE("safetensors byte-count mismatch message names file, tensor, dtype and shape") {
  const std::string header =
      R"({"encoder.layer3.attn.wq":{"dtype":"F32","shape":[16,32],"data_offsets":[0,1024]}})";
  CHECK_THROWS_WITH(parse_bytes(st_file(header, Bytes(1024)), "model.safetensors"),
                    "model.safetensors: tensor encoder.layer3.attn.wq has 1024 bytes, dtype F32 "
                    "shape [16, 32] needs 2048");
}

TEST_CASE("encode_safetensors writes sorted keys, a space-padded header and little-endian F32") {
  std::map<std::string, Tensor> tensors;
  tensors["b"] = Tensor({1}, 2.0f);
  tensors["a"] = Tensor({2}, 1.0f);
  tensors["a"].data[1] = -1.5f;
  // Expected header by hand: 1 + 52 + 1 + 53 + 1 = 108 characters, 4 spaces pad it to
  // 112 = 0x70.
  const std::string json =
      R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})";
  REQUIRE(json.size() == 108);
  Bytes expected = {0x70, 0, 0, 0, 0, 0, 0, 0};
  for (char c : json + "    ") expected.push_back(uint8_t(c));
  for (uint8_t b : {0x00, 0x00, 0x80, 0x3F, 0x00, 0x00, 0xC0, 0xBF, 0x00, 0x00, 0x00, 0x40})
    expected.push_back(b);
  CHECK(encode_safetensors(tensors, {}) == expected);

  // Metadata comes first; the header is padded so 8 + N is a multiple of 8.
  Bytes with_meta = encode_safetensors({{"x", Tensor({}, 3.0f)}}, {{"k", "v"}});
  const std::string meta_json =
      R"({"__metadata__":{"k":"v"},"x":{"dtype":"F32","shape":[],"data_offsets":[0,4]}})";
  REQUIRE(with_meta.size() > 8);
  CHECK(with_meta[0] == (meta_json.size() + 7) / 8 * 8);
  CHECK(std::string(with_meta.begin() + 8, with_meta.begin() + 8 + long(meta_json.size())) ==
        meta_json);
  CHECK(with_meta.size() == 8 + (meta_json.size() + 7) / 8 * 8 + 4);
}

TEST_CASE("safetensors write then read round-trips values, shapes and metadata") {
  TempDir dir;
  const std::string path = dir.file("model.safetensors");
  std::map<std::string, Tensor> tensors;
  Tensor m({2, 3, 4});
  for (size_t i = 0; i < m.data.size(); ++i) m.data[i] = float(i) * 0.25f - 3.0f;
  tensors["enc.w"] = m;
  tensors["scalar"] = Tensor({}, 7.0f);
  tensors["empty"] = Tensor({0, 5});
  Tensor special({5});
  special.data = {INFINITY, -INFINITY, -0.0f, std::ldexp(1.0f, -149), NAN};
  tensors["special"] = special;
  write_safetensors(path, tensors, {{"format", "pt"}, {"utf8", "h\xc3\xa9llo"}});

  SafetensorsFile f = read_safetensors(path);
  REQUIRE(f.tensors.size() == 4);
  CHECK(f.tensors.at("enc.w").shape == m.shape);
  CHECK(f.tensors.at("enc.w").data == m.data);
  CHECK(f.tensors.at("scalar").shape.empty());
  CHECK(f.tensors.at("scalar").data == std::vector<float>{7.0f});
  CHECK(f.tensors.at("empty").shape == Shape{0, 5});
  const auto& s = f.tensors.at("special").data;
  for (size_t i = 0; i < 4; ++i) CHECK(float_bits(s[i]) == float_bits(special.data[i]));
  CHECK(std::isnan(s[4]));
  CHECK(f.metadata.at("utf8") == "h\xc3\xa9llo");
  CHECK(f.source_dtype.at("enc.w") == "F32");

  // Overwriting replaces the file and leaves no temporary behind.
  write_safetensors(path, {{"only", Tensor({1}, 1.0f)}}, {});
  CHECK(read_safetensors(path).tensors.size() == 1);
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path)) files += e.is_regular_file();
  CHECK(files == 1);
}

TEST_CASE("read_safetensors parses a hand-written file from disk and reports file errors") {
  TempDir dir;
  const std::string path = dir.file("hand.safetensors");
  write_bytes(path, st_file(single("BF16", "[2]", 0, 4), {0x80, 0x3F, 0x00, 0xC0}));
  SafetensorsFile f = read_safetensors(path);
  CHECK(f.tensors.at("t").data == std::vector<float>{1.0f, -2.0f});
  CHECK(f.source_dtype.at("t") == "BF16");

  CHECK_THROWS_WITH(read_safetensors(dir.file("missing.safetensors")),
                    Contains("missing.safetensors: no such file"));
  CHECK_THROWS_WITH(read_safetensors(dir.path.string()), Contains("is a folder, not a file"));
  write_bytes(dir.file("empty.safetensors"), {});
  CHECK_THROWS_WITH(read_safetensors(dir.file("empty.safetensors")),
                    Contains("empty.safetensors") && Contains("too short"));
  write_bytes(dir.file("cut.safetensors"), st_file(single("F32", "[2]", 0, 8), Bytes(5)));
  CHECK_THROWS_WITH(read_safetensors(dir.file("cut.safetensors")), Contains("out of range"));
}

TEST_CASE("write_safetensors reports bad tensors and unwritable paths") {
  TempDir dir;
  Tensor bad;
  bad.shape = {2, 2};
  bad.data = {1.0f};
  CHECK_THROWS_WITH(write_safetensors(dir.file("x.safetensors"), {{"w", bad}}, {}),
                    Contains("x.safetensors") && Contains("tensor w") && Contains("[2, 2]"));
  CHECK_THROWS_WITH(write_safetensors(dir.file("x.safetensors"), {{"__metadata__", Tensor({1})}},
                                      {}),
                    Contains("__metadata__"));
  CHECK_THROWS_WITH(encode_safetensors({{"bad\xff", Tensor({1})}}, {}), Contains("UTF-8"));
  CHECK_THROWS_WITH(write_safetensors(dir.file("no/such/dir/x.safetensors"), {}, {}),
                    Contains("no/such/dir/x.safetensors") && Contains("cannot open for writing"));
  CHECK_FALSE(std::filesystem::exists(dir.file("x.safetensors")));
}
