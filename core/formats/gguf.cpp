#include "core/formats/gguf.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <exception>
#include <limits>
#include <numeric>

#include "core/formats/input_file.h"
#include "core/formats/mapped_file.h"
#include "core/tensor/error.h"
#include "core/tokenizers/utf8.h"

namespace atlas {

namespace {

constexpr uint64_t kMaxGgufDims = 8;      // ggml itself uses 4; more is a corrupt count
constexpr int kMaxArrayDepth = 16;        // arrays of arrays of ...: recursion stays shallow
constexpr uint64_t kMaxKeyBytes = 65535;  // the spec's limit for a key
constexpr uint64_t kDefaultAlignment = 32;

// The smallest encoding of one key/value (key length, empty key, type, a 1-byte value) and of
// one tensor info (name length, empty name, n_dims 0, type, offset): a count larger than the
// bytes left divided by these cannot be honest, and is refused before anything is reserved.
constexpr uint64_t kMinKeyValueBytes = 8 + 4 + 1;
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;

// Bytes one element of a metadata array takes at least in the file.
uint64_t min_element_bytes(GgufType t) {
  switch (t) {
    case GgufType::UInt8:
    case GgufType::Int8:
    case GgufType::Bool:
      return 1;
    case GgufType::UInt16:
    case GgufType::Int16:
      return 2;
    case GgufType::UInt32:
    case GgufType::Int32:
    case GgufType::Float32:
      return 4;
    case GgufType::UInt64:
    case GgufType::Int64:
    case GgufType::Float64:
      return 8;
    case GgufType::String:
      return 8;  // the length
    case GgufType::Array:
      return 12;  // element type + count
  }
  return 1;
}

bool known_type(uint32_t t) { return t <= uint32_t(GgufType::Float64); }

// Text from the file shown in a message: quoted, control bytes escaped, bytes of invalid UTF-8
// escaped too (so the message itself stays valid UTF-8), long names cut.
std::string in_quotes(const std::string& s, size_t max_len = 120) {
  const bool valid = utf8::is_valid(s);
  std::string out = "\"";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i >= max_len) {
      out += "...";
      break;
    }
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f || c == '"' || c == '\\' || (c >= 0x80 && !valid)) {
      static const char* hex = "0123456789abcdef";
      if (c == '"' || c == '\\') {
        out += '\\';
        out += static_cast<char>(c);
      } else {
        out += "\\x";
        out += hex[c >> 4];
        out += hex[c & 15];
      }
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string num(uint64_t v) { return std::to_string(v); }

[[noreturn]] void fail_at(const std::string& origin, const std::string& message) {
  throw AtlasError(origin + ": " + message);
}

}  // namespace

// Outside the anonymous namespace: GgufFile::parse_with names the reader in gguf.h.
// The first bytes of a file opened for its header only (GgufFile::open_header), read from the
// file as the parser reaches them, doubling, never past kMaxHeaderOnlyBytes.
constexpr uint64_t kMaxHeaderOnlyBytes = uint64_t(512) << 20;

struct GgufPrefix {
  const InputFile& file;
  std::string bytes;
  // Makes bytes [0, upto) available (upto is within the file).
  void ensure(uint64_t upto) {
    if (upto <= bytes.size()) return;
    if (upto > kMaxHeaderOnlyBytes)
      throw AtlasError(file.path() + ": the GGUF header (metadata and tensor table) runs past " +
                       format_bytes(kMaxHeaderOnlyBytes) + "; not read for its header alone");
    const uint64_t want = std::min<uint64_t>(
        std::min(file.size(), kMaxHeaderOnlyBytes),
        std::max<uint64_t>({upto, 2 * uint64_t(bytes.size()), uint64_t(1) << 20}));
    bytes += file.read_at(bytes.size(), want - bytes.size());
    if (bytes.size() < upto)
      throw AtlasError(file.path() + ": the file shrank while its header was read");
  }
};

// Bounds-checked little-endian reads over the file (held in memory, or its prefix read on
// demand). Every failure names the file and the item being read ("metadata key 3
// (\"general.name\")", with the array element path when inside one).
class GgufReader {
 public:
  GgufReader(const uint8_t* data, size_t size, const std::string& origin)
      : data_(data), size_(size), origin_(origin) {}
  GgufReader(GgufPrefix& prefix, size_t size, const std::string& origin)
      : data_(nullptr), size_(size), origin_(origin), prefix_(&prefix) {}

  size_t pos() const { return pos_; }
  size_t left() const { return size_ - pos_; }
  void set_item(std::string item) {
    item_ = std::move(item);
    path_.clear();
  }
  std::vector<uint64_t>& path() { return path_; }

  [[noreturn]] void fail(const std::string& message) const {
    std::string where = item_;
    if (path_.size() == 1) where += ", element " + num(path_[0]);
    if (path_.size() > 1) {  // inside nested arrays: ", element [2][0][5]"
      where += ", element ";
      for (uint64_t i : path_) {
        where += '[';
        where += num(i);
        where += ']';
      }
    }
    throw AtlasError(origin_ + ": " + (where.empty() ? "" : where + ": ") + message);
  }

  // Whether `n` more bytes could be part of a header read alone (always, in memory).
  void check_header_room(uint64_t n) const {
    if (prefix_ && pos_ + n > kMaxHeaderOnlyBytes)
      fail(num(n) + " bytes at byte " + num(pos_) + " would take the header past " +
           format_bytes(kMaxHeaderOnlyBytes) + "; not read for its header alone");
  }
  void need(uint64_t n, const char* what) {
    if (n > left())
      fail("truncated: " + std::string(what) + " needs " + num(n) + " bytes at byte " + num(pos_) +
           " but the file ends at byte " + num(size_));
    fetch(n);
  }
  uint64_t uint(int bytes, const char* what) {
    need(uint64_t(bytes), what);
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | data_[pos_ + size_t(i)];
    pos_ += size_t(bytes);
    return v;
  }
  uint32_t u32(const char* what) { return uint32_t(uint(4, what)); }
  uint64_t u64(const char* what) { return uint(8, what); }
  std::string str(const char* what) {
    const uint64_t n = u64(what);
    if (n > left())
      fail(std::string(what) + ": string length " + num(n) + " runs past the end of the file (" +
           num(left()) + " bytes left at byte " + num(pos_) + ")");
    fetch(n);
    std::string s(reinterpret_cast<const char*>(data_ + pos_), size_t(n));
    pos_ += size_t(n);
    return s;
  }

 private:
  void fetch(uint64_t n) {
    if (!prefix_) return;
    check_header_room(n);
    prefix_->ensure(pos_ + n);
    data_ = reinterpret_cast<const uint8_t*>(prefix_->bytes.data());
  }

  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  const std::string& origin_;
  std::string item_;
  std::vector<uint64_t> path_;
  GgufPrefix* prefix_ = nullptr;
};

namespace {

double f32_from_bits(uint64_t bits) {
  float f;
  const uint32_t b = uint32_t(bits);
  std::memcpy(&f, &b, 4);
  return double(f);
}
double f64_from_bits(uint64_t bits) {
  double d;
  std::memcpy(&d, &bits, 8);
  return d;
}

GgufType read_type(GgufReader& r, const char* what) {
  const uint32_t t = r.u32(what);
  if (!known_type(t))
    r.fail("unknown " + std::string(what) + " " + num(t) + " (GGUF defines 0..12)");
  return GgufType(t);
}

bool read_bool(GgufReader& r) {
  const uint64_t b = r.uint(1, "a bool value");
  if (b > 1) r.fail("bool value " + num(b) + " is neither 0 nor 1");
  return b == 1;
}

GgufArray read_array(GgufReader& r, int depth);

GgufValue read_value(GgufReader& r, GgufType type, int depth) {
  GgufValue v;
  v.type = type;
  switch (type) {
    case GgufType::UInt8:
      v.value = r.uint(1, "a UINT8 value");
      break;
    case GgufType::Int8:
      v.value = int64_t(int8_t(r.uint(1, "an INT8 value")));
      break;
    case GgufType::UInt16:
      v.value = r.uint(2, "a UINT16 value");
      break;
    case GgufType::Int16:
      v.value = int64_t(int16_t(r.uint(2, "an INT16 value")));
      break;
    case GgufType::UInt32:
      v.value = r.uint(4, "a UINT32 value");
      break;
    case GgufType::Int32:
      v.value = int64_t(int32_t(r.uint(4, "an INT32 value")));
      break;
    case GgufType::Float32:
      v.value = f32_from_bits(r.uint(4, "a FLOAT32 value"));
      break;
    case GgufType::Bool:
      v.value = read_bool(r);
      break;
    case GgufType::String:
      v.value = r.str("a string value");
      break;
    case GgufType::Array:
      v.value = read_array(r, depth + 1);
      break;
    case GgufType::UInt64:
      v.value = r.uint(8, "a UINT64 value");
      break;
    case GgufType::Int64:
      v.value = int64_t(r.uint(8, "an INT64 value"));
      break;
    case GgufType::Float64:
      v.value = f64_from_bits(r.uint(8, "a FLOAT64 value"));
      break;
  }
  return v;
}

template <typename T, typename ReadOne>
std::vector<T> read_elements(GgufReader& r, uint64_t count, ReadOne read_one) {
  std::vector<T> out;
  out.reserve(size_t(count));  // count was checked against the bytes left
  r.path().push_back(0);
  for (uint64_t i = 0; i < count; ++i) {
    r.path().back() = i;
    out.push_back(read_one());
  }
  r.path().pop_back();
  return out;
}

GgufArray read_array(GgufReader& r, int depth) {
  if (depth > kMaxArrayDepth)
    r.fail("arrays nested deeper than " + std::to_string(kMaxArrayDepth) + " levels");
  GgufArray a;
  a.type = read_type(r, "array element type");
  const uint64_t count = r.u64("an array length");
  const uint64_t min_bytes = min_element_bytes(a.type);
  if (count > r.left() / min_bytes)
    r.fail("array of " + num(count) + " " + gguf_type_name(a.type) +
           " elements cannot fit in the " + num(r.left()) + " bytes left in the file");
  r.check_header_room(count * min_bytes);  // before reserving: a header read alone is capped
  switch (a.type) {
    case GgufType::UInt8:
    case GgufType::UInt16:
    case GgufType::UInt32:
    case GgufType::UInt64: {
      const int bytes = int(min_bytes);
      a.items = read_elements<uint64_t>(r, count, [&] { return r.uint(bytes, "an element"); });
      break;
    }
    case GgufType::Int8:
    case GgufType::Int16:
    case GgufType::Int32:
    case GgufType::Int64: {
      const int bytes = int(min_bytes);
      a.items = read_elements<int64_t>(r, count, [&] {
        const uint64_t u = r.uint(bytes, "an element");
        const int shift = 64 - 8 * bytes;  // sign-extend from `bytes` bytes
        return int64_t(u << shift) >> shift;
      });
      break;
    }
    case GgufType::Float32:
      a.items =
          read_elements<double>(r, count, [&] { return f32_from_bits(r.uint(4, "an element")); });
      break;
    case GgufType::Float64:
      a.items =
          read_elements<double>(r, count, [&] { return f64_from_bits(r.uint(8, "an element")); });
      break;
    case GgufType::Bool: {
      std::vector<bool> bools;
      bools.reserve(size_t(count));
      r.path().push_back(0);
      for (uint64_t i = 0; i < count; ++i) {
        r.path().back() = i;
        bools.push_back(read_bool(r));
      }
      r.path().pop_back();
      a.items = std::move(bools);
      break;
    }
    case GgufType::String:
      a.items = read_elements<std::string>(r, count, [&] { return r.str("a string element"); });
      break;
    case GgufType::Array:
      a.items = read_elements<GgufArray>(r, count, [&] { return read_array(r, depth + 1); });
      break;
  }
  return a;
}

std::string dims_str(const std::vector<int64_t>& ne) {
  std::string s = "[";
  for (size_t i = 0; i < ne.size(); ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
  return s + "]";
}

std::string tensor_label(size_t i, const std::string& name) {
  return "tensor " + num(i) + " (" + in_quotes(name) + ")";
}

}  // namespace

const char* gguf_type_name(GgufType type) {
  switch (type) {
    case GgufType::UInt8:
      return "UINT8";
    case GgufType::Int8:
      return "INT8";
    case GgufType::UInt16:
      return "UINT16";
    case GgufType::Int16:
      return "INT16";
    case GgufType::UInt32:
      return "UINT32";
    case GgufType::Int32:
      return "INT32";
    case GgufType::Float32:
      return "FLOAT32";
    case GgufType::Bool:
      return "BOOL";
    case GgufType::String:
      return "STRING";
    case GgufType::Array:
      return "ARRAY";
    case GgufType::UInt64:
      return "UINT64";
    case GgufType::Int64:
      return "INT64";
    case GgufType::Float64:
      return "FLOAT64";
  }
  return "?";
}

size_t GgufArray::size() const {
  return std::visit([](const auto& v) { return v.size(); }, items);
}

GgufFile GgufFile::open(const std::string& path) {
  auto mapping = std::make_shared<MappedFile>(path, "a .gguf file");
  GgufFile f = parse(mapping->data(), mapping->size(), path);
  f.owner_ = std::move(mapping);
  return f;
}

GgufFile GgufFile::parse(std::vector<uint8_t> bytes, const std::string& origin) {
  auto owned = std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
  GgufFile f = parse(owned->data(), owned->size(), origin);
  f.owner_ = std::move(owned);
  return f;
}

GgufFile GgufFile::open_header(const std::string& path) {
  auto file = std::make_shared<const InputFile>(path, InputKind::Weights);
  GgufPrefix prefix{*file, {}};
  GgufReader r(prefix, size_t(file->size()), path);
  GgufFile f = parse_with(r, size_t(file->size()), path);
  f.header_file_ = std::move(file);
  return f;
}

GgufFile GgufFile::parse(const uint8_t* data, size_t size, const std::string& origin) {
  GgufReader r(data, size, origin);
  GgufFile f = parse_with(r, size, origin);
  f.data_ = data;
  return f;
}

GgufFile GgufFile::parse_with(GgufReader& r, size_t size, const std::string& origin) {
  GgufFile f;
  f.size_ = size;
  f.origin_ = origin;
  auto fail = [&](const std::string& m) { fail_at(origin, m); };

  if (size < 4)
    fail("file is " + num(size) + " bytes, too short for a GGUF file (truncated or empty)");
  const uint64_t magic = r.uint(4, "the magic");
  if (magic != 0x46554747u) {  // "GGUF" little-endian
    std::string seen(4, '\0');
    for (int i = 0; i < 4; ++i) seen[size_t(i)] = char((magic >> (8 * i)) & 0xff);
    fail("not a GGUF file: it starts with " + in_quotes(seen) + ", expected \"GGUF\"");
  }
  r.set_item("header");
  f.version_ = r.u32("the version");
  if (f.version_ == 0x02000000u || f.version_ == 0x03000000u)
    fail("a big-endian GGUF file (version " + num(f.version_ >> 24) +
         " stored big-endian); only little-endian files are supported");
  if (f.version_ == 1)
    fail(
        "GGUF version 1 is not supported (the 2023 format with 32-bit counts and lengths); "
        "supported: 2, 3 (convert the model again with a current llama.cpp)");
  if (f.version_ != 2 && f.version_ != 3)
    fail("GGUF version " + num(f.version_) + " is not supported; supported: 2, 3");
  const uint64_t tensor_count = r.u64("tensor_count");
  const uint64_t kv_count = r.u64("metadata_kv_count");
  if (kv_count > r.left() / kMinKeyValueBytes)
    fail("metadata_kv_count " + num(kv_count) + " is absurd for a file of " + num(size) +
         " bytes (each key/value takes at least " + num(kMinKeyValueBytes) + " bytes; truncated?)");
  if (tensor_count > r.left() / kMinTensorInfoBytes ||
      kv_count * kMinKeyValueBytes + tensor_count * kMinTensorInfoBytes > r.left())
    fail("tensor_count " + num(tensor_count) + " is absurd for a file of " + num(size) +
         " bytes (each tensor info takes at least " + num(kMinTensorInfoBytes) +
         " bytes; truncated?)");
  r.check_header_room(kv_count * kMinKeyValueBytes + tensor_count * kMinTensorInfoBytes);

  f.metadata_.reserve(size_t(kv_count));
  for (uint64_t i = 0; i < kv_count; ++i) {
    r.set_item("metadata key " + num(i));
    std::string key = r.str("the key");
    if (key.size() > kMaxKeyBytes)
      r.fail("the key is " + num(key.size()) + " bytes long, over GGUF's limit of 65535");
    if (const size_t bad = utf8::find_invalid(key); bad != std::string::npos)
      r.fail("the key " + in_quotes(key) + " is not valid UTF-8 (at byte " + num(bad) + ")");
    r.set_item("metadata key " + num(i) + " (" + in_quotes(key) + ")");
    if (auto it = f.key_index_.find(key); it != f.key_index_.end())
      r.fail("duplicate key: metadata key " + num(it->second) + " has the same name");
    const GgufType type = read_type(r, "value type");
    GgufValue value = read_value(r, type, 0);
    f.key_index_.emplace(key, f.metadata_.size());
    f.metadata_.push_back({std::move(key), std::move(value)});
  }

  if (const GgufValue* a = f.find("general.alignment")) {
    if (a->type != GgufType::UInt32)
      fail(std::string("metadata key \"general.alignment\" is ") + gguf_type_name(a->type) +
           ", expected UINT32");
    const uint64_t al = std::get<uint64_t>(a->value);
    if (al == 0 || !std::has_single_bit(al))
      fail("general.alignment " + num(al) + " is not a power of two");
    f.alignment_ = al;
  } else {
    f.alignment_ = kDefaultAlignment;
  }

  f.tensors_.reserve(size_t(tensor_count));
  for (uint64_t i = 0; i < tensor_count; ++i) {
    r.set_item("tensor " + num(i));
    GgufTensorInfo t;
    t.name = r.str("the name");
    const std::string label = tensor_label(i, t.name);
    r.set_item(label);
    if (auto it = f.tensor_index_.find(t.name); it != f.tensor_index_.end())
      r.fail("duplicate tensor name: tensor " + num(it->second) + " has the same name");
    const uint32_t n_dims = r.u32("n_dims");
    if (n_dims > kMaxGgufDims)
      r.fail("n_dims " + num(n_dims) + " is more than " + num(kMaxGgufDims) + " (corrupt file?)");
    int64_t numel = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const uint64_t ne = r.u64("a dimension");
      if (ne > uint64_t(std::numeric_limits<int64_t>::max()))
        r.fail("dimension " + num(d) + " is " + num(ne) + ", beyond 64-bit signed sizes");
      t.ne.push_back(int64_t(ne));
    }
    for (int64_t ne : t.ne)
      if (__builtin_mul_overflow(numel, ne, &numel))
        r.fail("dimensions " + dims_str(t.ne) + " hold more elements than 64-bit sizes allow");
    t.numel = numel;
    t.shape.assign(t.ne.rbegin(), t.ne.rend());
    t.ggml_type = r.u32("the ggml type");
    const GgmlTypeInfo info = ggml_type_info(t.ggml_type);
    if (!info.name)
      r.fail("unknown ggml type " + num(t.ggml_type) + " (supported: " + ggml_supported_types() +
             ")");
    t.type_name = info.name;
    const int64_t row = t.ne.empty() ? 1 : t.ne[0];
    if (row % info.block_elems != 0)
      r.fail("rows of " + std::to_string(row) + " elements (ne[0]) are not a multiple of " +
             t.type_name + "'s block of " + std::to_string(info.block_elems) + " elements");
    const uint64_t blocks = uint64_t(numel / info.block_elems);
    if (__builtin_mul_overflow(blocks, uint64_t(info.block_bytes), &t.n_bytes))
      r.fail("dimensions " + dims_str(t.ne) + " of type " + t.type_name +
             " take more bytes than 64-bit sizes allow");
    t.offset = r.u64("the offset");  // relative until the data section is known
    f.tensor_index_.emplace(t.name, f.tensors_.size());
    f.tensors_.push_back(std::move(t));
  }

  // The data section starts at the next multiple of the alignment (pos <= size < 2^63 and the
  // alignment is at most 2^31, so this cannot overflow).
  f.data_offset_ = (uint64_t(r.pos()) + f.alignment_ - 1) / f.alignment_ * f.alignment_;
  for (size_t i = 0; i < f.tensors_.size(); ++i) {
    GgufTensorInfo& t = f.tensors_[i];
    const std::string label = tensor_label(i, t.name);
    if (t.offset % f.alignment_ != 0)
      fail(label + ": offset " + num(t.offset) + " is not a multiple of the alignment " +
           num(f.alignment_));
    uint64_t begin = 0, end = 0;
    if (__builtin_add_overflow(f.data_offset_, t.offset, &begin) ||
        __builtin_add_overflow(begin, t.n_bytes, &end))
      fail(label + ": offset " + num(t.offset) + " and size " + num(t.n_bytes) +
           " lie beyond any file (the data section starts at byte " + num(f.data_offset_) + ")");
    if (end > size)
      fail(label + ": data [" + num(begin) + ", " + num(end) + ") ends past the file (" +
           num(size) + " bytes)");
    t.offset = begin;
  }
  // Tensors may not share bytes (gaps are allowed: writers pad differently).
  std::vector<size_t> order(f.tensors_.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return f.tensors_[a].offset != f.tensors_[b].offset
               ? f.tensors_[a].offset < f.tensors_[b].offset
               : a < b;
  });
  for (size_t k = 1; k < order.size(); ++k) {
    const GgufTensorInfo& a = f.tensors_[order[k - 1]];
    const GgufTensorInfo& b = f.tensors_[order[k]];
    if (b.n_bytes > 0 && a.offset + a.n_bytes > b.offset)
      fail(tensor_label(order[k - 1], a.name) + " and " + tensor_label(order[k], b.name) +
           " overlap: bytes [" + num(a.offset) + ", " + num(a.offset + a.n_bytes) + ") and [" +
           num(b.offset) + ", " + num(b.offset + b.n_bytes) + ")");
  }
  return f;
}

const GgufValue* GgufFile::find(const std::string& key) const {
  auto it = key_index_.find(key);
  return it == key_index_.end() ? nullptr : &metadata_[it->second].value;
}

void GgufFile::fail_key(const std::string& key, const GgufValue* v, const char* expected) const {
  if (!v) throw AtlasError(origin_ + ": metadata key " + in_quotes(key) + " is missing");
  std::string type = gguf_type_name(v->type);
  if (const auto* a = std::get_if<GgufArray>(&v->value))
    type += std::string(" of ") + gguf_type_name(a->type);
  throw AtlasError(origin_ + ": metadata key " + in_quotes(key) + " is " + type + ", expected " +
                   expected);
}

int64_t GgufFile::get_int(const std::string& key) const {
  const GgufValue* v = find(key);
  if (v) {
    if (const auto* i = std::get_if<int64_t>(&v->value)) return *i;
    if (const auto* u = std::get_if<uint64_t>(&v->value)) {
      if (*u > uint64_t(std::numeric_limits<int64_t>::max()))
        throw AtlasError(origin_ + ": metadata key " + in_quotes(key) + " is " + num(*u) +
                         ", beyond 64-bit signed integers");
      return int64_t(*u);
    }
  }
  fail_key(key, v, "an integer");
}

uint64_t GgufFile::get_uint(const std::string& key) const {
  const GgufValue* v = find(key);
  if (v) {
    if (const auto* u = std::get_if<uint64_t>(&v->value)) return *u;
    if (const auto* i = std::get_if<int64_t>(&v->value)) {
      if (*i < 0)
        throw AtlasError(origin_ + ": metadata key " + in_quotes(key) + " is " +
                         std::to_string(*i) + ", expected a non-negative integer");
      return uint64_t(*i);
    }
  }
  fail_key(key, v, "a non-negative integer");
}

double GgufFile::get_float(const std::string& key) const {
  const GgufValue* v = find(key);
  if (v)
    if (const auto* d = std::get_if<double>(&v->value)) return *d;
  fail_key(key, v, "FLOAT32 or FLOAT64");
}

bool GgufFile::get_bool(const std::string& key) const {
  const GgufValue* v = find(key);
  if (v)
    if (const auto* b = std::get_if<bool>(&v->value)) return *b;
  fail_key(key, v, "BOOL");
}

const std::string& GgufFile::get_string(const std::string& key) const {
  const GgufValue* v = find(key);
  if (v)
    if (const auto* s = std::get_if<std::string>(&v->value)) return *s;
  fail_key(key, v, "STRING");
}

const GgufArray& GgufFile::get_array(const std::string& key) const {
  const GgufValue* v = find(key);
  if (v)
    if (const auto* a = std::get_if<GgufArray>(&v->value)) return *a;
  fail_key(key, v, "an ARRAY");
}

std::vector<std::string> GgufFile::get_string_array(const std::string& key) const {
  const GgufValue* v = find(key);
  if (v)
    if (const auto* a = std::get_if<GgufArray>(&v->value))
      if (const auto* s = std::get_if<std::vector<std::string>>(&a->items)) return *s;
  fail_key(key, v, "an ARRAY of STRING");
}

std::vector<int64_t> GgufFile::get_int_array(const std::string& key) const {
  const GgufValue* v = find(key);
  if (v) {
    if (const auto* a = std::get_if<GgufArray>(&v->value)) {
      if (const auto* i = std::get_if<std::vector<int64_t>>(&a->items)) return *i;
      if (const auto* u = std::get_if<std::vector<uint64_t>>(&a->items)) {
        std::vector<int64_t> out;
        out.reserve(u->size());
        for (size_t k = 0; k < u->size(); ++k) {
          if ((*u)[k] > uint64_t(std::numeric_limits<int64_t>::max()))
            throw AtlasError(origin_ + ": metadata key " + in_quotes(key) + ", element " + num(k) +
                             " is " + num((*u)[k]) + ", beyond 64-bit signed integers");
          out.push_back(int64_t((*u)[k]));
        }
        return out;
      }
    }
  }
  fail_key(key, v, "an ARRAY of integers");
}

std::vector<double> GgufFile::get_float_array(const std::string& key) const {
  const GgufValue* v = find(key);
  if (v)
    if (const auto* a = std::get_if<GgufArray>(&v->value))
      if (const auto* d = std::get_if<std::vector<double>>(&a->items)) return *d;
  fail_key(key, v, "an ARRAY of FLOAT32 or FLOAT64");
}

int64_t GgufFile::get_int_or(const std::string& key, int64_t fallback) const {
  return has(key) ? get_int(key) : fallback;
}
double GgufFile::get_float_or(const std::string& key, double fallback) const {
  return has(key) ? get_float(key) : fallback;
}
std::string GgufFile::get_string_or(const std::string& key, const std::string& fallback) const {
  return has(key) ? get_string(key) : fallback;
}

const GgufTensorInfo& GgufFile::tensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  if (it == tensor_index_.end())
    throw AtlasError(origin_ + ": no tensor " + in_quotes(name) + " (the file has " +
                     num(tensors_.size()) + " tensors)");
  return tensors_[it->second];
}

namespace {

void require_supported(const GgufTensorInfo& t, const std::string& origin) {
  if (!ggml_type_info(t.ggml_type).supported)
    throw AtlasError(origin + ": tensor " + in_quotes(t.name) + " has ggml type " + t.type_name +
                     " (" + num(t.ggml_type) +
                     "), which is not supported; supported: " + ggml_supported_types());
}

void dequantize_into(const GgufTensorInfo& t, const uint8_t* data, Tensor& out) {
  out.shape = t.shape;
  out.data.resize(size_t(t.numel));
  if (t.numel > 0)
    dequantize_ggml(t.ggml_type, data + t.offset,
                    t.numel / ggml_type_info(t.ggml_type).block_elems, out.data.data());
}

}  // namespace

Tensor GgufFile::read_tensor(const std::string& name) const {
  const GgufTensorInfo& t = tensor(name);
  require_supported(t, origin_);
  Tensor out;
  if (header_file_) {  // opened for its header: this tensor's bytes alone, read now
    GgufTensorInfo alone = t;
    alone.offset = 0;
    const std::string bytes = header_file_->read_at(t.offset, t.n_bytes);
    if (bytes.size() != t.n_bytes) throw AtlasError(origin_ + ": the file shrank while it was read");
    dequantize_into(alone, reinterpret_cast<const uint8_t*>(bytes.data()), out);
    return out;
  }
  dequantize_into(t, data_, out);
  return out;
}

void GgufFile::require_data(const char* what) const {
  if (!data_)
    throw AtlasError(origin_ + ": opened for its header only; " + what + " needs the file mapped");
}

PackedMatrix GgufFile::read_packed(const std::string& name) const {
  require_data("read_packed");
  const GgufTensorInfo& t = tensor(name);
  require_supported(t, origin_);
  const GgmlTypeInfo info = ggml_type_info(t.ggml_type);
  if (t.ne.size() < 2 || t.ne[0] % info.block_elems != 0)
    throw AtlasError(origin_ + ": tensor " + in_quotes(name) + " " + shape_str(t.shape) + " of type " +
                     t.type_name + " is not a matrix of whole " + num(uint64_t(info.block_elems)) +
                     "-value blocks per row");
  PackedMatrix m;
  m.type = t.ggml_type;
  m.cols = t.ne[0];
  m.rows = t.ne[0] == 0 ? 0 : t.numel / t.ne[0];
  m.row_bytes = t.ne[0] / info.block_elems * info.block_bytes;
  m.data = data_ + t.offset;
  m.owner = owner_;
  return m;
}

std::map<std::string, Tensor> GgufFile::read_all_tensors() const {
  require_data("read_all_tensors");
  std::map<std::string, Tensor> out;
  std::vector<std::pair<const GgufTensorInfo*, Tensor*>> work;
  for (const GgufTensorInfo& t : tensors_) {
    require_supported(t, origin_);
    work.emplace_back(&t, &out[t.name]);
  }
  std::stable_sort(work.begin(), work.end(),
                   [](const auto& a, const auto& b) { return a.first->numel > b.first->numel; });
  std::exception_ptr failure;  // bad_alloc must not leave an OpenMP region
#pragma omp parallel for schedule(dynamic, 1)
  for (size_t w = 0; w < work.size(); ++w) {
    try {
      dequantize_into(*work[w].first, data_, *work[w].second);
    } catch (...) {
#pragma omp critical(gguf_failure)
      failure = std::current_exception();
    }
  }
  if (failure) std::rethrow_exception(failure);
  return out;
}

}  // namespace atlas
