#include "core/formats/npy.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string_view>
#include <system_error>

#include "core/formats/input_file.h"
#include "core/tensor/error.h"
#include "core/formats/safetensors.h"
#include "core/formats/file_fields.h"

namespace atlas {

namespace {

using file_fields::checked_numel;
using file_fields::load_le;
using file_fields::narrow_double;

// Text from the file, printable and at most 80 characters, for messages.
std::string header_text(std::string_view s) { return file_fields::printable(s, 80); }

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
constexpr size_t kAlign = 64;       // numpy aligns the data start to 64 bytes
constexpr size_t kMaxNpyDims = 64;  // NPY_MAXDIMS of numpy 2

[[noreturn]] void npy_error(const std::string& origin, const std::string& message) {
  throw AtlasError(origin + ": " + message);
}

std::string shape_tuple(const Shape& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

// ---- header dict parser: the subset of Python literals numpy writes ------------------------

struct PyValue {
  enum Kind { Str, Bool, None, Int, Tuple, List } kind = None;
  std::string str;
  bool flag = false;
  int64_t num = 0;
  bool num_overflow = false;
  std::vector<PyValue> items;
};

class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& origin) : s_(text), origin_(origin) {}

  std::vector<std::pair<std::string, PyValue>> parse_dict() {
    std::vector<std::pair<std::string, PyValue>> out;
    skip_ws();
    expect('{');
    skip_ws();
    while (!at('}')) {
      PyValue key = value(0);
      if (key.kind != PyValue::Str) error("dict key is not a string");
      skip_ws();
      expect(':');
      out.emplace_back(key.str, value(0));
      skip_ws();
      if (at(',')) {
        ++pos_;
        skip_ws();
      } else if (!at('}')) {
        error("expected ',' or '}'");
      }
    }
    ++pos_;
    skip_ws();
    if (pos_ != s_.size()) error("unexpected text after the closing '}'");
    return out;
  }

 private:
  [[noreturn]] void error(const std::string& what) {
    npy_error(origin_, "malformed .npy header at character " + std::to_string(pos_) + ": " + what +
                           " (header: \"" + header_text(s_) + "\")");
  }
  bool at(char c) const { return pos_ < s_.size() && s_[pos_] == c; }
  void expect(char c) {
    if (!at(c)) error(std::string("expected '") + c + "'");
    ++pos_;
  }
  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' ||
                                s_[pos_] == '\r'))
      ++pos_;
  }
  bool word(std::string_view w) {
    if (s_.substr(pos_, w.size()) != w) return false;
    pos_ += w.size();
    return true;
  }

  PyValue value(int depth) {
    if (depth > 8) error("nesting too deep");
    skip_ws();
    if (pos_ >= s_.size()) error("unexpected end of header");
    PyValue v;
    char c = s_[pos_];
    if (c == '\'' || c == '"') {
      v.kind = PyValue::Str;
      ++pos_;
      while (!at(c)) {
        if (pos_ >= s_.size()) error("unterminated string");
        if (s_[pos_] == '\\' && pos_ + 1 < s_.size()) ++pos_;  // keep the escaped char as is
        v.str += s_[pos_++];
      }
      ++pos_;
    } else if (word("True")) {
      v.kind = PyValue::Bool;
      v.flag = true;
    } else if (word("False")) {
      v.kind = PyValue::Bool;
    } else if (word("None")) {
      v.kind = PyValue::None;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      v.kind = PyValue::Int;
      bool neg = c == '-';
      if (neg) ++pos_;
      if (pos_ >= s_.size() || s_[pos_] < '0' || s_[pos_] > '9') error("expected a digit");
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
        int digit = s_[pos_++] - '0';
        if (__builtin_mul_overflow(v.num, 10, &v.num) ||
            __builtin_add_overflow(v.num, neg ? -digit : digit, &v.num))
          v.num_overflow = true;
      }
      if (at('L') || at('l')) ++pos_;  // Python 2 long suffix in old files
    } else if (c == '(' || c == '[') {
      v.kind = c == '(' ? PyValue::Tuple : PyValue::List;
      const char close = c == '(' ? ')' : ']';
      ++pos_;
      skip_ws();
      while (!at(close)) {
        v.items.push_back(value(depth + 1));
        skip_ws();
        if (at(',')) {
          ++pos_;
          skip_ws();
        } else if (!at(close)) {
          error(std::string("expected ',' or '") + close + "'");
        }
      }
      ++pos_;
    } else {
      error("unexpected character '" + header_text(s_.substr(pos_, 1)) + "'");
    }
    return v;
  }

  std::string_view s_;
  const std::string& origin_;
  size_t pos_ = 0;
};

// ---- element types ----------------------------------------------------------------------

enum class Elem { F32, F64, F16, I64, I32, I16, I8, U64, U32, U16, U8, Bool };

struct ElemInfo {
  const char* code;  // descr without the byte-order character
  Elem elem;
  uint64_t size;
};

constexpr ElemInfo kElems[] = {
    {"f4", Elem::F32, 4}, {"f8", Elem::F64, 8}, {"f2", Elem::F16, 2}, {"i8", Elem::I64, 8},
    {"i4", Elem::I32, 4}, {"i2", Elem::I16, 2}, {"i1", Elem::I8, 1},  {"u8", Elem::U64, 8},
    {"u4", Elem::U32, 4}, {"u2", Elem::U16, 2}, {"u1", Elem::U8, 1},  {"b1", Elem::Bool, 1},
};

const ElemInfo& parse_descr(const std::string& descr, const std::string& origin) {
  const std::string shown = "'" + header_text(descr) + "'";
  if (descr.size() >= 2) {
    const char order = descr[0];
    const std::string code = descr.substr(1);
    for (const ElemInfo& e : kElems) {
      if (code != e.code) continue;
      if (e.size == 1 && (order == '|' || order == '<' || order == '>' || order == '='))
        return e;
      if (order == '<') return e;
      if (order == '>')
        npy_error(origin, "big-endian data (descr " + shown +
                              ") is not supported; save the array with a little-endian dtype, e.g. "
                              "arr.astype('<" +
                              code + "')");
      break;
    }
  }
  npy_error(origin, "unsupported dtype descr " + shown +
                        " (supported: <f4 <f8 <f2 <i8 <i4 <i2 |i1 <u8 <u4 <u2 |u1 |b1)");
}

void convert_elements(const uint8_t* src, Elem elem, uint64_t n, float* dst) {
  for (uint64_t i = 0; i < n; ++i) {
    switch (elem) {
      case Elem::F32: {
        uint32_t bits = uint32_t(load_le(src + 4 * i, 4));
        std::memcpy(&dst[i], &bits, 4);
        break;
      }
      case Elem::F64: {
        uint64_t bits = load_le(src + 8 * i, 8);
        double d;
        std::memcpy(&d, &bits, 8);
        dst[i] = narrow_double(d);
        break;
      }
      case Elem::F16: dst[i] = half_to_float(uint16_t(load_le(src + 2 * i, 2))); break;
      case Elem::I64: dst[i] = float(int64_t(load_le(src + 8 * i, 8))); break;
      case Elem::I32: dst[i] = float(int32_t(uint32_t(load_le(src + 4 * i, 4)))); break;
      case Elem::I16: dst[i] = float(int16_t(uint16_t(load_le(src + 2 * i, 2)))); break;
      case Elem::I8: dst[i] = float(int8_t(src[i])); break;
      case Elem::U64: dst[i] = float(load_le(src + 8 * i, 8)); break;
      case Elem::U32: dst[i] = float(uint32_t(load_le(src + 4 * i, 4))); break;
      case Elem::U16: dst[i] = float(uint16_t(load_le(src + 2 * i, 2))); break;
      case Elem::U8: dst[i] = float(src[i]); break;
      case Elem::Bool: dst[i] = src[i] ? 1.0f : 0.0f; break;
    }
  }
}

const PyValue* find_key(const std::vector<std::pair<std::string, PyValue>>& dict,
                        const std::string& key) {
  const PyValue* found = nullptr;
  for (const auto& [k, v] : dict)
    if (k == key) found = &v;  // Python keeps the last duplicate
  return found;
}

}  // namespace

// ---- writing ------------------------------------------------------------------------------

std::vector<uint8_t> npy_header(const Shape& shape, DType dtype) {
  const bool is_int = dtype == DType::I32;
  std::string dict = std::string("{'descr': '") + (is_int ? "<i4" : "<f4") +
                     "', 'fortran_order': False, 'shape': " + shape_tuple(shape) + ", }";
  // Version 1 stores the header length in a u16; only absurdly many dims need version 2.
  auto padded = [&](size_t prefix) {
    const size_t pad = (kAlign - (prefix + dict.size() + 1) % kAlign) % kAlign;
    return dict + std::string(pad, ' ') + '\n';
  };
  size_t prefix = 10;
  std::string header = padded(prefix);
  if (header.size() > 0xffff) header = padded(prefix = 12);

  std::vector<uint8_t> out(kMagic, kMagic + kMagicLen);
  out.push_back(prefix == 10 ? 1 : 2);
  out.push_back(0);
  for (size_t i = 0; i < prefix - 8; ++i) out.push_back(uint8_t(header.size() >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  return out;
}

std::vector<uint8_t> encode_npy(const Tensor& t, DType dtype) {
  uint64_t numel = 0;
  if (!checked_numel(t.shape, numel) || numel != t.data.size())
    throw AtlasError("cannot write .npy: tensor shape " + shape_str(t.shape) + " does not match " +
                     std::to_string(t.data.size()) + " values");
  const bool is_int = dtype == DType::I32;
  std::vector<uint8_t> out = npy_header(t.shape, dtype);
  out.reserve(out.size() + 4 * numel);
  for (size_t i = 0; i < t.data.size(); ++i) {
    const float v = t.data[i];
    uint32_t bits;
    if (is_int) {
      // Range check before the cast: converting NaN or an out-of-range float is undefined.
      if (!(v >= -2147483648.0f && v < 2147483648.0f) || std::trunc(v) != v)
        throw AtlasError("cannot write int32 .npy: element " + std::to_string(i) + " is " +
                         std::to_string(v) + ", not an integer in int32 range");
      bits = uint32_t(int32_t(v));
    } else {
      std::memcpy(&bits, &v, 4);
    }
    for (int b = 0; b < 4; ++b) out.push_back(uint8_t(bits >> (8 * b)));
  }
  return out;
}

void write_npy(const std::string& path, const Tensor& t, DType dtype) {
  std::vector<uint8_t> bytes;
  try {
    bytes = encode_npy(t, dtype);
  } catch (const AtlasError& e) {
    npy_error(path, e.what());
  }
  AtomicFileWriter writer(path);
  writer.write(bytes.data(), bytes.size());
  writer.commit();
}

// ---- reading ------------------------------------------------------------------------------

Tensor decode_npy(const uint8_t* data, size_t size, const std::string& origin) {
  if (size < 10 || std::memcmp(data, kMagic, kMagicLen) != 0)
    npy_error(origin, "not a .npy file (it does not start with the \\x93NUMPY magic)");
  const int major = data[6], minor = data[7];
  size_t prefix = 0;
  if (major == 1) prefix = 10;
  else if (major == 2 || major == 3) prefix = 12;
  else
    npy_error(origin, "unsupported .npy format version " + std::to_string(major) + "." +
                          std::to_string(minor) + " (supported: 1.0, 2.0, 3.0)");
  if (size < prefix) npy_error(origin, "file is truncated inside the .npy header");
  const uint64_t header_len = load_le(data + 8, int(prefix - 8));
  if (header_len > size - prefix)
    npy_error(origin, "header length " + std::to_string(header_len) + " is larger than the file (" +
                          std::to_string(size - prefix) + " bytes follow): truncated");

  const std::string_view text(reinterpret_cast<const char*>(data + prefix), header_len);
  const auto dict = HeaderParser(text, origin).parse_dict();

  const PyValue* descr = find_key(dict, "descr");
  const PyValue* fortran = find_key(dict, "fortran_order");
  const PyValue* shape_v = find_key(dict, "shape");
  if (!descr || !fortran || !shape_v)
    npy_error(origin, std::string("header has no '") +
                          (!descr     ? "descr"
                           : !fortran ? "fortran_order"
                                      : "shape") +
                          "' key");
  if (descr->kind != PyValue::Str)
    npy_error(origin, "structured or non-string dtype descr is not supported");
  const ElemInfo& elem = parse_descr(descr->str, origin);
  if (fortran->kind != PyValue::Bool) npy_error(origin, "'fortran_order' is not True or False");
  if (fortran->flag)
    npy_error(origin,
              "fortran_order True (column-major) is not supported; save a C-order array "
              "(np.ascontiguousarray)");
  if (shape_v->kind != PyValue::Tuple) npy_error(origin, "'shape' is not a tuple");
  if (shape_v->items.size() > kMaxNpyDims)
    npy_error(origin, "shape has " + std::to_string(shape_v->items.size()) +
                          " dimensions (at most " + std::to_string(kMaxNpyDims) + " allowed)");

  Shape shape;
  for (const PyValue& d : shape_v->items) {
    if (d.kind != PyValue::Int) npy_error(origin, "shape contains a non-integer");
    if (d.num_overflow) npy_error(origin, "shape dimension is absurdly large");
    if (d.num < 0) npy_error(origin, "shape dimension " + std::to_string(d.num) + " is negative");
    shape.push_back(d.num);
  }
  uint64_t numel = 0, nbytes = 0;
  if (!checked_numel(shape, numel) || __builtin_mul_overflow(numel, elem.size, &nbytes))
    npy_error(origin, "shape " + shape_str(shape) + " is absurd: its byte count overflows");

  const uint64_t available = size - prefix - header_len;
  const std::string what = "shape " + shape_str(shape) + " dtype '" + header_text(descr->str) +
                           "' needs " +
                           std::to_string(nbytes) + " bytes of data, the file has " +
                           std::to_string(available);
  if (available < nbytes) npy_error(origin, "truncated data: " + what);
  if (available > nbytes) npy_error(origin, "trailing garbage: " + what);

  Tensor t;
  t.shape = std::move(shape);
  t.data.resize(numel);
  convert_elements(data + prefix + header_len, elem.elem, numel, t.data.data());
  return t;
}

Tensor read_npy(const std::string& path) {
  const std::string bytes = read_input_file(path, InputKind::Npy);
  return decode_npy(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), path);
}

}  // namespace atlas
