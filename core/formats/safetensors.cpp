#include "core/formats/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <exception>
#include <bit>
#include <cerrno>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <system_error>

#include "core/tensor/error.h"
#include "core/formats/input_file.h"
#include "core/formats/json_text.h"
#include "core/formats/mapped_file.h"
#include "core/formats/packed_weights.h"
#include "core/formats/npy.h"
#include "core/formats/file_fields.h"
#include "core/formats/ggml_types.h"

namespace atlas {

namespace {

using file_fields::checked_numel;
using file_fields::load_le;
using file_fields::narrow_double;

// Text from the file, printable and at most 120 characters, for messages.
std::string file_text(std::string_view s) { return file_fields::printable(s, 120); }

using nlohmann::json;

constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // the limit huggingface/safetensors enforces
constexpr const char* kMetadataKey = "__metadata__";

enum class Kind { F32, F16, BF16, F64, I64, I32, I16, I8, U64, U32, U16, U8, Bool };

struct DTypeInfo {
  const char* name;
  Kind kind;
  uint64_t size;
};

constexpr DTypeInfo kDTypes[] = {
    {"F32", Kind::F32, 4}, {"F16", Kind::F16, 2}, {"BF16", Kind::BF16, 2},
    {"F64", Kind::F64, 8}, {"I64", Kind::I64, 8}, {"I32", Kind::I32, 4},
    {"I16", Kind::I16, 2}, {"I8", Kind::I8, 1},   {"U64", Kind::U64, 8},
    {"U32", Kind::U32, 4}, {"U16", Kind::U16, 2}, {"U8", Kind::U8, 1},
    {"BOOL", Kind::Bool, 1},
};

const DTypeInfo* find_dtype(const std::string& name) {
  for (const DTypeInfo& d : kDTypes)
    if (name == d.name) return &d;
  return nullptr;
}

std::string supported_dtypes() {
  std::string s;
  for (const DTypeInfo& d : kDTypes) s += (s.empty() ? "" : ", ") + std::string(d.name);
  return s;
}

[[noreturn]] void safetensors_error(const std::string& origin, const std::string& message) {
  throw AtlasError(origin + ": " + message);
}

float bits_to_float(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

void convert_tensor_data(const uint8_t* src, Kind kind, uint64_t n, float* dst) {
  if (n == 0) return;  // empty tensors: dst may be null, and memcpy(null, ...) is undefined
  switch (kind) {
    case Kind::F32:
      if constexpr (std::endian::native == std::endian::little) {
        std::memcpy(dst, src, 4 * n);  // the common case for big checkpoints: one copy
      } else {
        for (uint64_t i = 0; i < n; ++i) dst[i] = bits_to_float(uint32_t(load_le(src + 4 * i, 4)));
      }
      break;
    case Kind::F16:
      for (uint64_t i = 0; i < n; ++i) dst[i] = half_to_float(uint16_t(load_le(src + 2 * i, 2)));
      break;
    case Kind::BF16:
      // (A hostile file may place a BF16 tensor at an odd offset: then the byte loop.)
      if (std::endian::native == std::endian::little && reinterpret_cast<uintptr_t>(src) % 2 == 0) {
        // BF16 is the top half of the float32 pattern: a widening shift the compiler
        // vectorises (the byte-by-byte loop below was a quarter of opening a 1B BF16 model).
        using AliasedU16 = uint16_t __attribute__((may_alias));
        using AliasedU32 = uint32_t __attribute__((may_alias));
        const AliasedU16* in = reinterpret_cast<const AliasedU16*>(src);
        AliasedU32* out = reinterpret_cast<AliasedU32*>(dst);
#pragma omp simd
        for (uint64_t i = 0; i < n; ++i) out[i] = uint32_t(in[i]) << 16;
      } else {
        for (uint64_t i = 0; i < n; ++i) dst[i] = bf16_to_float(uint16_t(load_le(src + 2 * i, 2)));
      }
      break;
    case Kind::F64:
      for (uint64_t i = 0; i < n; ++i) {
        uint64_t bits = load_le(src + 8 * i, 8);
        double d;
        std::memcpy(&d, &bits, 8);
        dst[i] = narrow_double(d);
      }
      break;
    case Kind::I64:
      for (uint64_t i = 0; i < n; ++i) dst[i] = float(int64_t(load_le(src + 8 * i, 8)));
      break;
    case Kind::I32:
      for (uint64_t i = 0; i < n; ++i) dst[i] = float(int32_t(uint32_t(load_le(src + 4 * i, 4))));
      break;
    case Kind::I16:
      for (uint64_t i = 0; i < n; ++i) dst[i] = float(int16_t(uint16_t(load_le(src + 2 * i, 2))));
      break;
    case Kind::I8:
      for (uint64_t i = 0; i < n; ++i) dst[i] = float(int8_t(src[i]));
      break;
    case Kind::U64:
      for (uint64_t i = 0; i < n; ++i) dst[i] = float(load_le(src + 8 * i, 8));
      break;
    case Kind::U32:
      for (uint64_t i = 0; i < n; ++i) dst[i] = float(uint32_t(load_le(src + 4 * i, 4)));
      break;
    case Kind::U16:
      for (uint64_t i = 0; i < n; ++i) dst[i] = float(uint16_t(load_le(src + 2 * i, 2)));
      break;
    case Kind::U8:
      for (uint64_t i = 0; i < n; ++i) dst[i] = float(src[i]);
      break;
    case Kind::Bool:
      for (uint64_t i = 0; i < n; ++i) dst[i] = src[i] ? 1.0f : 0.0f;
      break;
  }
}

std::string shape_json(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

// A header integer that must be a non-negative whole number (dims, offsets). nlohmann parses
// non-negative literals as unsigned, negative ones as signed and anything with '.' or 'e' as
// float, so the JSON type tells the cases apart.
uint64_t header_uint(const json& v, const std::string& origin, const std::string& what) {
  switch (v.type()) {
    case json::value_t::number_unsigned:
      return v.get<uint64_t>();
    case json::value_t::number_integer:
      safetensors_error(origin, what + " is negative (" + std::to_string(v.get<int64_t>()) + ")");
    case json::value_t::number_float:
      safetensors_error(origin, what + " is not an integer (" + file_text(v.dump()) + ")");
    default:
      safetensors_error(origin,
                        what + " is a " + std::string(v.type_name()) + ", expected an integer");
  }
}

struct Entry {
  std::string name;
  const DTypeInfo* dtype;
  Shape shape;
  uint64_t numel;
  uint64_t begin, end;
};

Entry parse_entry(const std::string& name, const json& v, const std::string& origin) {
  const std::string where = "tensor " + file_text(name);
  if (!v.is_object())
    safetensors_error(origin,
                      where + ": header entry is a " + v.type_name() + ", expected an object");
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!v.contains(key))
      safetensors_error(origin, where + ": header entry has no \"" + key + "\" key");

  Entry e;
  e.name = name;
  const json& dtype = v["dtype"];
  if (!dtype.is_string()) safetensors_error(origin, where + ": \"dtype\" is not a string");
  e.dtype = find_dtype(dtype.get<std::string>());
  if (!e.dtype)
    safetensors_error(origin, where + ": unsupported dtype \"" +
                                  file_text(dtype.get<std::string>()) +
                                  "\" (supported: " + supported_dtypes() + ")");

  const json& shape = v["shape"];
  if (!shape.is_array()) safetensors_error(origin, where + ": \"shape\" is not an array");
  for (size_t i = 0; i < shape.size(); ++i) {
    uint64_t d = header_uint(shape[i], origin, where + ": shape dimension " + std::to_string(i));
    if (d > uint64_t(std::numeric_limits<int64_t>::max()))
      safetensors_error(origin, where + ": shape dimension " + std::to_string(i) +
                                    " is absurdly large (" + std::to_string(d) + ")");
    e.shape.push_back(int64_t(d));
  }

  const json& offsets = v["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2)
    safetensors_error(origin, where + ": \"data_offsets\" must be an array [begin, end]");
  e.begin = header_uint(offsets[0], origin, where + ": data_offsets begin");
  e.end = header_uint(offsets[1], origin, where + ": data_offsets end");
  return e;
}

// Checks one entry against its own dtype/shape and the data buffer size.
void check_entry(const Entry& e, uint64_t data_size, const std::string& origin) {
  const std::string where = "tensor " + file_text(e.name);
  const std::string range = "[" + std::to_string(e.begin) + ", " + std::to_string(e.end) + "]";
  uint64_t numel = 0, nbytes = 0;
  if (!checked_numel(e.shape, numel) || __builtin_mul_overflow(numel, e.dtype->size, &nbytes))
    safetensors_error(origin, where + ": shape " + shape_str(e.shape) + " with dtype " +
                                  e.dtype->name + " is absurd: its byte count overflows");
  if (e.end < e.begin)
    safetensors_error(origin, where + ": data_offsets " + range + " end before begin");
  if (e.end > data_size)
    safetensors_error(origin, where + ": data_offsets " + range +
                                  " out of range: the data buffer has " +
                                  std::to_string(data_size) + " bytes (file truncated?)");
  if (e.end - e.begin != nbytes)
    safetensors_error(origin, where + " has " + std::to_string(e.end - e.begin) + " bytes, dtype " +
                                  e.dtype->name + " shape " + shape_str(e.shape) + " needs " +
                                  std::to_string(nbytes));
}

// Offsets sorted by begin must tile [0, data_size) exactly: no overlap, hole or trailing bytes.
void check_tiling(std::vector<Entry>& entries, uint64_t data_size, const std::string& origin) {
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  auto span = [](const Entry& e) {
    return "tensor " + file_text(e.name) + " [" + std::to_string(e.begin) + ", " +
           std::to_string(e.end) + ")";
  };
  uint64_t expected = 0;
  const Entry* prev = nullptr;
  for (const Entry& e : entries) {
    if (e.begin < expected)
      safetensors_error(origin,
                        "data overlap: " + span(*prev) + " and " + span(e) + " share bytes");
    if (e.begin > expected)
      safetensors_error(origin, "hole in the data buffer: bytes [" + std::to_string(expected) +
                                    ", " + std::to_string(e.begin) + ") before " + span(e) +
                                    " belong to no tensor");
    expected = e.end;
    prev = &e;
  }
  if (expected != data_size)
    safetensors_error(
        origin, "trailing garbage: " + std::to_string(data_size - expected) +
                    " bytes after the end of the last tensor's data (the header accounts for " +
                    std::to_string(expected) + " of " + std::to_string(data_size) + " data bytes)");
}

std::string json_string(const std::string& s, const std::string& what) {
  try {
    return json(s).dump();
  } catch (const json::exception&) {
    throw AtlasError("cannot write safetensors: " + what + " \"" + file_text(s) +
                     "\" is not valid UTF-8");
  }
}

// Builds the padded header and the data size for writing all tensors as F32 in key order.
std::string build_header(const std::map<std::string, Tensor>& tensors,
                         const std::map<std::string, std::string>& metadata,
                         uint64_t& data_size) {
  std::string h = "{";
  if (!metadata.empty()) {
    h += std::string("\"") + kMetadataKey + "\":{";
    bool first = true;
    for (const auto& [k, v] : metadata) {
      h += (first ? "" : ",") + json_string(k, "metadata key") + ":" +
           json_string(v, "metadata value");
      first = false;
    }
    h += "}";
  }
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    if (name == kMetadataKey)
      throw AtlasError("cannot write safetensors: a tensor may not be named __metadata__");
    uint64_t numel = 0;
    const uint64_t held = t.packed ? uint64_t(t.numel()) : t.data.size();
    if (!checked_numel(t.shape, numel) || numel != held)
      throw AtlasError("cannot write safetensors: tensor " + file_text(name) + " has shape " +
                       shape_str(t.shape) + " but " + std::to_string(held) + " values");
    uint64_t end = offset + 4 * numel;
    h += (h.size() > 1 ? "," : "") + json_string(name, "tensor name") +
         ":{\"dtype\":\"F32\",\"shape\":" + shape_json(t.shape) + ",\"data_offsets\":[" +
         std::to_string(offset) + "," + std::to_string(end) + "]}";
    offset = end;
  }
  h += "}";
  // Padding to a multiple of 8 keeps the data buffer 8-byte aligned for readers that map it.
  h.append((8 - h.size() % 8) % 8, ' ');
  data_size = offset;
  return h;
}

// Emits the whole file through `sink(const uint8_t*, size_t)`, converting floats in chunks so
// writing a large model never needs a second full-size buffer.
template <typename Sink>
void emit_safetensors(const std::string& header, const std::map<std::string, Tensor>& tensors,
                      Sink&& sink) {
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = uint8_t(uint64_t(header.size()) >> (8 * i));
  sink(len, 8);
  sink(reinterpret_cast<const uint8_t*>(header.data()), header.size());
  std::vector<uint8_t> chunk;
  constexpr size_t kChunkFloats = 1 << 16;
  auto emit_floats = [&](const float* values, size_t count) {
    for (size_t i = 0; i < count; i += kChunkFloats) {
      size_t n = std::min(kChunkFloats, count - i);
      chunk.resize(4 * n);
      for (size_t j = 0; j < n; ++j) {
        uint32_t bits;
        std::memcpy(&bits, &values[i + j], 4);
        for (int b = 0; b < 4; ++b) chunk[4 * j + b] = uint8_t(bits >> (8 * b));
      }
      sink(chunk.data(), chunk.size());
    }
  };
  std::vector<float> row;
  for (const auto& [name, t] : tensors) {
    if (!t.packed) {
      emit_floats(t.data.data(), t.data.size());
      continue;
    }
    row.resize(size_t(t.packed->cols));  // a weight held encoded: converted a row at a time
    for (int64_t r = 0; r < t.packed->rows; ++r) {
      dequantize_rows(*t.packed, r, 1, row.data());
      emit_floats(row.data(), row.size());
    }
  }
}

}  // namespace

float half_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  if (exp == 0x1f) return bits_to_float(sign | 0x7f800000u | (mant << 13));  // inf / NaN
  if (exp != 0) return bits_to_float(sign | ((exp - 15 + 127) << 23) | (mant << 13));
  if (mant == 0) return bits_to_float(sign);  // signed zero
  // Subnormal mant * 2^-24: normalise so the leading 1 becomes the implicit bit of a float.
  int e = -14;
  while (!(mant & 0x400)) {
    mant <<= 1;
    --e;
  }
  return bits_to_float(sign | uint32_t(e + 127) << 23 | ((mant & 0x3ff) << 13));
}

float bf16_to_float(uint16_t b) { return bits_to_float(uint32_t(b) << 16); }

namespace {

// Converts `numel` elements in chunks; when `release_pages` is set (the source is a private
// read-only file mapping), the pages already converted are dropped from the process with
// MADV_DONTNEED, so a load's peak resident size is about one float copy of the weights plus one
// chunk instead of the whole mapped file on top of the copy (bench/bench_load.cpp).
void convert_releasing(const uint8_t* src, Kind kind, uint64_t numel, uint64_t elem_size,
                       float* dst, bool release_pages) {
  if (!release_pages) {
    convert_tensor_data(src, kind, numel, dst);
    return;
  }
  static const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  constexpr uint64_t kChunkBytes = 8u << 20;
  const uint64_t chunk = std::max<uint64_t>(1, kChunkBytes / elem_size);
  const int64_t chunks = static_cast<int64_t>((numel + chunk - 1) / chunk);
  // Chunks are converted by all CPU threads: BF16/F16 widening and the page faults of the
  // float copy are the bulk of opening a half-precision checkpoint.
#pragma omp parallel for schedule(dynamic, 1) if (chunks > 1)
  for (int64_t c = 0; c < chunks; ++c) {
    const uint64_t i = static_cast<uint64_t>(c) * chunk;
    const uint64_t n = std::min(chunk, numel - i);
    const uint8_t* from = src + i * elem_size;
    convert_tensor_data(from, kind, n, dst + i);
    // Whole pages inside [from, from + n * size) only: neighbours may still be unread.
    uintptr_t lo = (reinterpret_cast<uintptr_t>(from) + page - 1) / page * page;
    uintptr_t hi = (reinterpret_cast<uintptr_t>(from + n * elem_size)) / page * page;
    if (hi > lo) ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);  // a hint
  }
}

// The 8-byte length and the JSON header at the start of `data` (`available` bytes of a file of
// `file_size`): its entries, checked against the data buffer the file holds, and __metadata__.
// Returns the header length.
uint64_t parse_header(const uint8_t* data, uint64_t available, uint64_t file_size,
                      const std::string& origin, std::vector<Entry>& entries,
                      std::map<std::string, std::string>& metadata) {
  if (file_size < 8 || available < 8)
    safetensors_error(origin,
                      "file is " + std::to_string(file_size) +
                          " bytes, too short for the 8-byte header length (truncated or not a "
                          "safetensors file)");
  const uint64_t n = load_le(data, 8);
  if (n > kMaxHeaderBytes)
    safetensors_error(origin, "header length " + std::to_string(n) +
                                  " exceeds the 100 MB limit (corrupt "
                                  "or not a safetensors file)");
  if (n > file_size - 8 || n > available - 8)
    safetensors_error(origin, "header length " + std::to_string(n) + " is larger than the file (" +
                                  std::to_string(file_size - 8) +
                                  " bytes follow the length field): truncated");

  // Depth capped like the reference parser (serde_json, 128); a repeated key keeps the last, as
  // there.
  json header;
  try {
    header = parse_json_text(std::string_view(reinterpret_cast<const char*>(data + 8), n),
                             "", JsonLimits{128, false});
  } catch (const AtlasError& e) {
    safetensors_error(origin,
                      "header is not valid JSON (" + file_fields::printable(e.what(), 200) + ")");
  }
  if (!header.is_object())
    safetensors_error(
        origin, std::string("header is not a JSON object (it is a ") + header.type_name() + ")");

  const uint64_t data_size = file_size - 8 - n;
  for (const auto& [name, value] : header.items()) {
    if (name == kMetadataKey) {
      if (!value.is_object())
        safetensors_error(origin, std::string("__metadata__ must be an object of strings (found ") +
                                      value.type_name() + ")");
      for (const auto& [k, v] : value.items()) {
        if (!v.is_string())
          safetensors_error(origin, "__metadata__ value for key \"" + file_text(k) + "\" is a " +
                                        v.type_name() + ", expected a string");
        metadata[k] = v.get<std::string>();
      }
      continue;
    }
    entries.push_back(parse_entry(name, value, origin));
    check_entry(entries.back(), data_size, origin);
  }
  check_tiling(entries, data_size, origin);
  return n;
}

using SkipTensor = std::function<bool(const std::string&)>;

// `mapping` (null for a caller's buffer) keeps `data` alive for the tensors kept encoded.
SafetensorsFile parse_impl(const uint8_t* data, size_t size, const std::string& origin,
                           bool release_pages, const SkipTensor& skip = {},
                           const SkipTensor& keep_encoded = {},
                           const std::shared_ptr<const void>& mapping = {});

}  // namespace

SafetensorsFile parse_safetensors(const uint8_t* data, size_t size, const std::string& origin) {
  return parse_impl(data, size, origin, false);
}

namespace {

SafetensorsFile parse_impl(const uint8_t* data, size_t size, const std::string& origin,
                           bool release_pages, const SkipTensor& skip,
                           const SkipTensor& keep_encoded,
                           const std::shared_ptr<const void>& mapping) {
  SafetensorsFile file;
  std::vector<Entry> entries;
  const uint64_t n = parse_header(data, size, size, origin, entries, file.metadata);

  // Tensors are allocated and converted by all CPU threads, largest first: the kernel zeroes
  // every fresh page of the float copies on first touch, which single-threaded was most of
  // opening a BF16 checkpoint (a 1B model's 5 GB). Inside one tensor, chunks then run in turn.
  const uint8_t* buffer = data + 8 + n;
  std::vector<std::pair<const Entry*, Tensor*>> work;
  for (const Entry& e : entries) {
    if (skip && skip(e.name)) {
      file.unread[e.name] = e.shape;
      continue;
    }
    Tensor& t = file.tensors[e.name];
    t.shape = e.shape;
    file.source_dtype[e.name] = e.dtype->name;
    const bool sixteen_bit = e.dtype->kind == Kind::F16 || e.dtype->kind == Kind::BF16;
    if (mapping && keep_encoded && sixteen_bit && e.shape.size() == 2 && e.begin % 2 == 0 &&
        keep_encoded(e.name)) {  // read in place: the same bytes as ggml's F16 / BF16 rows
      PackedMatrix m;
      m.type = e.dtype->kind == Kind::F16 ? ggml_type::F16 : ggml_type::BF16;
      m.rows = e.shape[0];
      m.cols = e.shape[1];
      m.row_bytes = m.cols * 2;
      m.data = buffer + e.begin;
      m.owner = mapping;
      t.packed = std::make_shared<const PackedMatrix>(std::move(m));
      continue;
    }
    work.emplace_back(&e, &t);
  }
  std::stable_sort(work.begin(), work.end(), [](const auto& a, const auto& b) {
    return a.first->end - a.first->begin > b.first->end - b.first->begin;
  });
  std::exception_ptr failure;  // bad_alloc must not leave an OpenMP region
#pragma omp parallel for schedule(dynamic, 1) if (size > (size_t{64} << 20))
  for (size_t w = 0; w < work.size(); ++w) {
    const Entry& e = *work[w].first;
    const uint64_t numel = (e.end - e.begin) / e.dtype->size;  // validated against the shape
    try {
      work[w].second->data.resize(numel);
      convert_releasing(buffer + e.begin, e.dtype->kind, numel, e.dtype->size,
                        work[w].second->data.data(), release_pages);
    } catch (...) {
#pragma omp critical(safetensors_failure)
      failure = std::current_exception();
    }
  }
  if (failure) std::rethrow_exception(failure);
  return file;
}

}  // namespace

SafetensorsFile read_safetensors(const std::string& path, const SkipTensor& skip,
                                 const SkipTensor& keep_encoded) {
  auto file = std::make_shared<const MappedFile>(path, "a .safetensors file");
  // Pages are released as they are converted only when no tensor stays in the mapping.
  return parse_impl(file->data(), file->size(), path, file->size() > 0 && !keep_encoded, skip,
                    keep_encoded, file);
}

SafetensorsHeader read_safetensors_header(const std::string& path) {
  const InputFile file(path, InputKind::Weights);
  const std::string length = file.read_at(0, 8);
  std::string bytes = length;
  if (length.size() == 8) {
    const uint64_t n = load_le(reinterpret_cast<const uint8_t*>(length.data()), 8);
    if (n <= kMaxHeaderBytes) bytes += file.read_at(8, n);  // parse_header refuses a longer one
  }
  return parse_safetensors_header(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(),
                                  file.size(), path);
}

SafetensorsHeader parse_safetensors_header(const uint8_t* data, size_t available,
                                           uint64_t file_size, const std::string& origin) {
  SafetensorsHeader out;
  out.file_size = file_size;
  std::vector<Entry> entries;
  parse_header(data, available, file_size, origin, entries, out.metadata);
  for (const Entry& e : entries)
    out.tensors.push_back({e.name, e.dtype->name, e.shape, e.end - e.begin, e.dtype->size});
  return out;
}

std::vector<uint8_t> encode_safetensors(const std::map<std::string, Tensor>& tensors,
                                        const std::map<std::string, std::string>& metadata) {
  uint64_t data_size = 0;
  const std::string header = build_header(tensors, metadata, data_size);
  std::vector<uint8_t> out;
  out.reserve(8 + header.size() + data_size);
  emit_safetensors(header, tensors,
                   [&](const uint8_t* p, size_t n) { out.insert(out.end(), p, p + n); });
  return out;
}

void write_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  uint64_t data_size = 0;
  std::string header;
  try {
    header = build_header(tensors, metadata, data_size);
  } catch (const AtlasError& e) {
    safetensors_error(path, e.what());
  }
  AtomicFileWriter writer(path);  // its errors already name the path
  emit_safetensors(header, tensors, [&](const uint8_t* p, size_t n) { writer.write(p, n); });
  writer.commit();
}

}  // namespace atlas
