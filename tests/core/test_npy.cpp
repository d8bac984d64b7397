// .npy writing and reading. Expected bytes and input files are written out by hand from the
// format description (numpy/lib/format.py), never produced by the code under test.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "core/tensor/error.h"
#include "core/formats/npy.h"
#include "tests/core/temp_dir.h"

using namespace atlas;
using atlas::test::TempDir;
using Catch::Contains;
using Bytes = std::vector<uint8_t>;

namespace {

Bytes bytes_of(const std::string& s) { return Bytes(s.begin(), s.end()); }

Bytes concat(Bytes a, const Bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// A version-1 file: magic, 1.0, u16 header length, the header text as given, then data.
Bytes npy_v1(const std::string& header, const Bytes& data) {
  Bytes out = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, uint8_t(header.size() & 0xff),
               uint8_t(header.size() >> 8)};
  return concat(concat(out, bytes_of(header)), data);
}

Tensor decode(const Bytes& b, const std::string& origin = "a.npy") {
  return decode_npy(b.data(), b.size(), origin);
}

}  // namespace

TEST_CASE("encode_npy writes the exact v1.0 header and little-endian float data") {
  Tensor t({2, 3});
  t.data = {1.0f, 2.0f, -1.5f, 0.5f, 0.0f, -2.0f};
  // Dict is 59 characters; 10 + 59 + 1 = 70, so 58 spaces bring the header to 128 bytes and
  // the header length field to 118 = 0x76.
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  Bytes expected = {0x93, 'N', 'U', 'M', 'P', 'Y', 0x01, 0x00, 0x76, 0x00};
  expected = concat(expected, bytes_of(dict + std::string(58, ' ') + "\n"));
  REQUIRE(expected.size() == 128);
  expected = concat(expected, {0x00, 0x00, 0x80, 0x3F, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00,
                               0xC0, 0xBF, 0x00, 0x00, 0x00, 0x3F, 0x00, 0x00, 0x00, 0x00,
                               0x00, 0x00, 0x00, 0xC0});
  CHECK(encode_npy(t, DType::F32) == expected);
}

TEST_CASE("encode_npy writes 1-D shapes with a trailing comma and 0-d shapes as ()") {
  const Bytes one = encode_npy(Tensor({5}, 1.0f), DType::F32);
  // 57-character dict: 60 spaces pad to 128.
  const std::string h1 = "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }" +
                         std::string(60, ' ') + "\n";
  REQUIRE(one.size() == 128 + 20);
  CHECK(std::string(one.begin() + 10, one.begin() + 128) == h1);
  CHECK(one[8] == 118);

  const Bytes zero = encode_npy(Tensor({}, 2.0f), DType::F32);
  const std::string h0 = "{'descr': '<f4', 'fortran_order': False, 'shape': (), }" +
                         std::string(62, ' ') + "\n";
  REQUIRE(zero.size() == 128 + 4);
  CHECK(std::string(zero.begin() + 10, zero.begin() + 128) == h0);
  CHECK(Bytes(zero.begin() + 128, zero.end()) == Bytes{0x00, 0x00, 0x00, 0x40});

  // An empty array still has a full header and no data.
  const Bytes empty = encode_npy(Tensor({0, 3}), DType::F32);
  CHECK(empty.size() == 128);
  CHECK(std::string(empty.begin() + 10, empty.end()).find("'shape': (0, 3), }") !=
        std::string::npos);
}

TEST_CASE("encode_npy writes int32 arrays as <i4 and refuses non-integral values") {
  Tensor t({3});
  t.data = {-1.0f, 7.0f, 65536.0f};
  const Bytes b = encode_npy(t, DType::I32);
  const std::string h = "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }" +
                        std::string(60, ' ') + "\n";
  REQUIRE(b.size() == 128 + 12);
  CHECK(std::string(b.begin() + 10, b.begin() + 128) == h);
  CHECK(Bytes(b.begin() + 128, b.end()) ==
        Bytes{0xFF, 0xFF, 0xFF, 0xFF, 0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00});

  Tensor frac({2});
  frac.data = {1.0f, 2.5f};
  CHECK_THROWS_WITH(encode_npy(frac, DType::I32), Contains("element 1") && Contains("int32"));
  frac.data = {NAN, 0.0f};
  CHECK_THROWS_WITH(encode_npy(frac, DType::I32), Contains("element 0"));
  frac.data = {0.0f, 3e9f};
  CHECK_THROWS_WITH(encode_npy(frac, DType::I32), Contains("int32 range"));
  frac.data = {-2147483648.0f, 0.0f};  // INT32_MIN is representable and allowed
  CHECK_NOTHROW(encode_npy(frac, DType::I32));

  Tensor bad;
  bad.shape = {2, 2};
  bad.data = {1.0f};
  CHECK_THROWS_WITH(encode_npy(bad, DType::F32), Contains("[2, 2]"));
}

TEST_CASE("decode_npy reads hand-written v1 files in every supported dtype") {
  // numpy's own padding puts extra spaces before the newline; none is required.
  Tensor f4 = decode(npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }   \n",
                            {0x00, 0x00, 0x80, 0x3F, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0xC0,
                             0xBF, 0x00, 0x00, 0x00, 0x3F}));
  CHECK(f4.shape == Shape{2, 2});
  CHECK(f4.data == std::vector<float>{1.0f, 2.0f, -1.5f, 0.5f});

  struct Case {
    std::string descr;
    Bytes bytes;
    std::vector<float> expected;
  };
  const std::vector<Case> cases = {
      {"<f8", {0, 0, 0, 0, 0, 0, 0xF8, 0x3F, 0, 0, 0, 0, 0, 0, 0xF0, 0xBF}, {1.5f, -1.0f}},
      {"<i8", {0xFD, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x10, 0, 0, 0, 0, 0, 0, 0},
       {-3.0f, 16.0f}},
      {"<i4", {0xFE, 0xFF, 0xFF, 0xFF, 0x00, 0x01, 0x00, 0x00}, {-2.0f, 256.0f}},
      {"|u1", {0xFF, 0x00}, {255.0f, 0.0f}},
      {"|b1", {0x00, 0x01}, {0.0f, 1.0f}},
      {"<f2", {0x00, 0x3C, 0x01, 0x00}, {1.0f, std::ldexp(1.0f, -24)}},
      {"|i1", {0xFF, 0x05}, {-1.0f, 5.0f}},
      {"<u2", {0xFF, 0xFF, 0x02, 0x00}, {65535.0f, 2.0f}},
  };
  for (const Case& c : cases) {
    INFO("descr " << c.descr);
    Tensor t = decode(
        npy_v1("{'descr': '" + c.descr + "', 'fortran_order': False, 'shape': (2,), }\n", c.bytes));
    CHECK(t.shape == Shape{2});
    CHECK(t.data == c.expected);
  }
}

TEST_CASE("decode_npy reads 0-d, empty, v2/v3 headers and tolerant header spellings") {
  Tensor s = decode(npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (), }\n",
                           {0x00, 0x00, 0x40, 0x40}));
  CHECK(s.shape.empty());
  CHECK(s.data == std::vector<float>{3.0f});

  Tensor e = decode(npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 0), }\n", {}));
  CHECK(e.shape == Shape{3, 0});
  CHECK(e.data.empty());

  // Key order, quotes, Python 2 long suffixes and missing trailing commas vary across writers.
  Tensor odd = decode(npy_v1("{\"shape\": (1L,2L), \"fortran_order\": False, \"descr\": '<i4'}",
                             {0x01, 0, 0, 0, 0x02, 0, 0, 0}));
  CHECK(odd.shape == Shape{1, 2});
  CHECK(odd.data == std::vector<float>{1.0f, 2.0f});

  const std::string h = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }\n";
  for (uint8_t major : {2, 3}) {
    Bytes v = {0x93, 'N', 'U', 'M', 'P', 'Y', major, 0, uint8_t(h.size()), 0, 0, 0};
    v = concat(concat(v, bytes_of(h)), {0x00, 0x00, 0x80, 0xBF});
    Tensor t = decode(v);
    CHECK(t.shape == Shape{1});
    CHECK(t.data == std::vector<float>{-1.0f});
  }
}

TEST_CASE("decode_npy rejects unsupported layouts and corrupt files, naming the problem") {
  const Bytes four(4, 0);
  auto hdr = [](const std::string& descr, const std::string& fortran, const std::string& shape) {
    return "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape +
           ", }\n";
  };
  CHECK_THROWS_WITH(decode(npy_v1(hdr("<f4", "True", "(1,)"), four), "x.npy"),
                    Contains("x.npy") && Contains("fortran_order True"));
  CHECK_THROWS_WITH(decode(npy_v1(hdr(">f4", "False", "(1,)"), four)), Contains("big-endian"));
  CHECK_THROWS_WITH(decode(npy_v1(hdr("<c8", "False", "(1,)"), Bytes(8))),
                    Contains("unsupported dtype descr '<c8'"));
  CHECK_THROWS_WITH(decode(npy_v1(hdr("<f4", "False", "(2,)"), four)),
                    Contains("truncated data") && Contains("needs 8 bytes") &&
                        Contains("has 4"));
  CHECK_THROWS_WITH(decode(npy_v1(hdr("<f4", "False", "(1,)"), Bytes(6))),
                    Contains("trailing garbage"));
  CHECK_THROWS_WITH(decode(npy_v1(hdr("<f4", "False", "(1099511627776, 1099511627776)"), four)),
                    Contains("absurd") && Contains("overflows"));
  CHECK_THROWS_WITH(decode(npy_v1(hdr("<f8", "False", "(4611686018427387904,)"), four)),
                    Contains("overflows"));
  CHECK_THROWS_WITH(decode(npy_v1(hdr("<f4", "False", "(99999999999999999999,)"), four)),
                    Contains("absurdly large"));
  CHECK_THROWS_WITH(decode(npy_v1(hdr("<f4", "False", "(2, -1)"), four)),
                    Contains("negative"));
  CHECK_THROWS_WITH(decode(npy_v1(hdr("<f4", "False", "[1]"), four)),
                    Contains("'shape' is not a tuple"));
  CHECK_THROWS_WITH(decode(npy_v1("{'descr': [('a', '<f4')], 'fortran_order': False, "
                                  "'shape': (1,), }\n",
                                  four)),
                    Contains("structured"));
  CHECK_THROWS_WITH(decode(npy_v1("{'descr': '<f4', 'shape': (1,), }\n", four)),
                    Contains("'fortran_order'"));
  CHECK_THROWS_WITH(decode(npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)",
                                  four)),
                    Contains("malformed .npy header"));
  CHECK_THROWS_WITH(decode(npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} x",
                                  four)),
                    Contains("after the closing"));

  CHECK_THROWS_WITH(decode(bytes_of("PK\x03\x04 not numpy")), Contains("not a .npy file"));
  CHECK_THROWS_WITH(decode(Bytes{0x93, 'N', 'U'}), Contains("not a .npy file"));
  Bytes v9 = npy_v1(hdr("<f4", "False", "(1,)"), four);
  v9[6] = 9;
  CHECK_THROWS_WITH(decode(v9), Contains("version 9.0"));
  Bytes cut = npy_v1(hdr("<f4", "False", "(1,)"), {});
  cut.resize(30);  // header length says more than what is left
  CHECK_THROWS_WITH(decode(cut), Contains("larger than the file"));
}

TEST_CASE("write_npy and read_npy round-trip through a file") {
  TempDir dir;
  Tensor t({2, 2, 3});
  for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = float(i) - 5.0f;
  write_npy(dir.file("a.npy"), t, DType::F32);
  Tensor r = read_npy(dir.file("a.npy"));
  CHECK(r.shape == t.shape);
  CHECK(r.data == t.data);

  write_npy(dir.file("i.npy"), t, DType::I32);
  CHECK(read_npy(dir.file("i.npy")).data == t.data);

  // The file on disk starts with the v1 magic and its data begins at byte 128.
  CHECK(std::filesystem::file_size(dir.file("a.npy")) == 128 + 12 * 4);

  CHECK_THROWS_WITH(read_npy(dir.file("missing.npy")),
                    Contains("missing.npy: no such file"));
  CHECK_THROWS_WITH(read_npy(dir.path.string()), Contains("is a folder, not a file"));
  Tensor frac({1}, 0.5f);
  CHECK_THROWS_WITH(write_npy(dir.file("f.npy"), frac, DType::I32),
                    Contains("f.npy") && Contains("int32"));
  CHECK_FALSE(std::filesystem::exists(dir.file("f.npy")));
  CHECK_THROWS_WITH(write_npy(dir.file("none/a.npy"), t, DType::F32), Contains("none/a.npy"));
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path)) files += e.is_regular_file();
  CHECK(files == 2);  // no temporaries left behind
}
