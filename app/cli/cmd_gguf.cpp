// atlas gguf: what a GGUF file (llama.cpp's model format, core/formats/gguf.h) holds: version,
// architecture, metadata, the tensor table; --dump-tensor writes one tensor dequantized as .npy.
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <map>
#include <type_traits>

#include "app/cli/commands.h"
#include "app/cli/output_file.h"
#include "core/formats/gguf.h"
#include "core/formats/input_file.h"
#include "core/formats/npy.h"
#include "core/tensor/error.h"

namespace atlas::cli {

namespace {

const char* kGgufUsage =
    "usage: atlas gguf FILE.gguf [--metadata] [--tensors] [--dump-tensor NAME --out F.npy]\n"
    "  Summarises a GGUF file (llama.cpp's model format, versions 2 and 3): version,\n"
    "  architecture, counts, tensor types and sizes.\n"
    "  --metadata          every key with its type and value (long arrays such as\n"
    "                      tokenizer.ggml.tokens: type, count and the first few)\n"
    "  --tensors           the tensor table: name, shape (row-major: the file's dims\n"
    "                      reversed), ggml type, bytes\n"
    "  --dump-tensor NAME  writes tensor NAME dequantized to float32 as .npy to --out\n"
    "                      (types F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, "
    "Q6_K)\n";

constexpr size_t kArrayShown = 5;    // elements shown of a long array
constexpr size_t kArrayWhole = 8;    // arrays up to this long are shown whole
constexpr size_t kStringShown = 80;  // bytes of a string value shown

std::string type_label(const GgufValue& v) {
  if (const auto* a = std::get_if<GgufArray>(&v.value))
    return std::string("ARRAY[") + gguf_type_name(a->type) + "]";
  return gguf_type_name(v.type);
}

template <typename F>
std::string shortest(F x) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, x);
  return std::string(buf, r.ptr);
}

std::string show_string(const std::string& s, size_t max_bytes) {
  std::string out(1, '"');
  out += printable(s, max_bytes);
  out += '"';
  return out;
}

std::string show_float(double d, GgufType type) {
  return type == GgufType::Float32 ? shortest(float(d)) : shortest(d);
}

std::string show_array(const GgufArray& a, size_t depth);

// Element i of an array, as text.
std::string show_element(const GgufArray& a, size_t i, size_t depth) {
  return std::visit(
      [&](const auto& items) -> std::string {
        using T = typename std::decay_t<decltype(items)>::value_type;
        if constexpr (std::is_same_v<T, std::string>)
          return show_string(items[i], 40);
        else if constexpr (std::is_same_v<T, GgufArray>)
          return show_array(items[i], depth + 1);
        else if constexpr (std::is_same_v<T, double>)
          return show_float(items[i], a.type);
        else if constexpr (std::is_same_v<T, bool>)
          return items[i] ? "true" : "false";
        else
          return std::to_string(items[i]);
      },
      a.items);
}

std::string show_array(const GgufArray& a, size_t depth) {
  const size_t n = a.size();
  std::string s = std::string("ARRAY[") + gguf_type_name(a.type) + "] " + std::to_string(n);
  if (depth > 2) return s;  // deeper nesting: the type and count say enough
  const size_t shown = n <= kArrayWhole ? n : kArrayShown;
  s += " [";
  for (size_t i = 0; i < shown; ++i) s += (i ? ", " : "") + show_element(a, i, depth);
  if (shown < n) s += ", ... (" + std::to_string(n - shown) + " more)";
  return s + "]";
}

std::string show_value(const GgufValue& v) {
  return std::visit(
      [&](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) {
          std::string s = show_string(x, kStringShown);
          if (x.size() > kStringShown) s += " (" + std::to_string(x.size()) + " bytes)";
          return s;
        } else if constexpr (std::is_same_v<T, GgufArray>) {
          const std::string full = show_array(x, 0);
          return full.substr(full.find(' ') + 1);  // the type is in its own column
        } else if constexpr (std::is_same_v<T, double>) {
          return show_float(x, v.type);
        } else if constexpr (std::is_same_v<T, bool>) {
          return x ? "true" : "false";
        } else {
          return std::to_string(x);
        }
      },
      v.value);
}

void print_summary(const GgufFile& f) {
  std::printf("file: %s (%s)\n", printable(f.origin()).c_str(),
              format_bytes(f.file_size()).c_str());
  std::printf("GGUF version %u, alignment %llu, data at byte %llu\n", f.version(),
              static_cast<unsigned long long>(f.alignment()),
              static_cast<unsigned long long>(f.data_offset()));
  // Shown whatever their type: a summary should not fail on an odd file.
  auto text = [&](const char* key) -> std::string {
    const GgufValue* v = f.find(key);
    if (!v) return "(not given)";
    const auto* s = std::get_if<std::string>(&v->value);
    return s ? printable(*s, 200) : show_value(*v) + " (" + type_label(*v) + ", expected STRING)";
  };
  std::printf("architecture: %s\n", text("general.architecture").c_str());
  if (f.has("general.name")) std::printf("name: %s\n", text("general.name").c_str());
  std::printf("metadata: %zu keys\n", f.metadata().size());
  std::map<std::string, size_t> per_type;
  uint64_t bytes = 0;
  long double values = 0;  // a sum of int64 counts may exceed int64
  for (const GgufTensorInfo& t : f.tensors()) {
    ++per_type[t.type_name];
    bytes += t.n_bytes;  // every tensor lies inside the file: no overflow
    values += static_cast<long double>(t.numel);
  }
  std::vector<std::pair<std::string, size_t>> types(per_type.begin(), per_type.end());
  std::stable_sort(types.begin(), types.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string type_list;
  for (const auto& [name, n] : types)
    type_list += (type_list.empty() ? "" : ", ") + name + " " + std::to_string(n);
  std::printf("tensors: %zu (%s), %s of data, %.0Lf values\n", f.tensors().size(),
              type_list.empty() ? "none" : type_list.c_str(), format_bytes(bytes).c_str(), values);
}

void print_metadata(const GgufFile& f) {
  size_t width = 0;
  for (const GgufKeyValue& kv : f.metadata())
    width = std::max(width, std::min<size_t>(kv.key.size(), 48));
  std::printf("\nmetadata (%zu keys):\n", f.metadata().size());
  for (const GgufKeyValue& kv : f.metadata())
    std::printf("  %-*s  %-15s %s\n", int(width), printable(kv.key, 120).c_str(),
                type_label(kv.value).c_str(), show_value(kv.value).c_str());
}

void print_tensors(const GgufFile& f) {
  size_t width = 4, shape_width = 5;
  for (const GgufTensorInfo& t : f.tensors()) {
    width = std::max(width, std::min<size_t>(t.name.size(), 64));
    shape_width = std::max(shape_width, shape_str(t.shape).size());
  }
  std::printf("\ntensors (%zu):\n", f.tensors().size());
  std::printf("  %-*s  %-*s  %-7s  %s\n", int(width), "name", int(shape_width), "shape", "type",
              "bytes");
  for (const GgufTensorInfo& t : f.tensors())
    std::printf("  %-*s  %-*s  %-7s  %llu\n", int(width), printable(t.name, 120).c_str(),
                int(shape_width), shape_str(t.shape).c_str(), t.type_name.c_str(),
                static_cast<unsigned long long>(t.n_bytes));
}

}  // namespace

int cmd_gguf(const std::vector<std::string>& args) {
  if (wants_help(args, kGgufUsage)) return 0;
  Args a(args, {{"--dump-tensor", "--out"}, {"--metadata", "--tensors"}});
  if (a.positionals().size() != 1)
    throw AtlasError("gguf takes one FILE.gguf (see atlas gguf --help)");
  if (a.has("--dump-tensor") != a.has("--out"))
    throw AtlasError(a.has("--out") ? "--out needs --dump-tensor NAME"
                                    : "--dump-tensor needs --out F.npy");
  // A bad --out is refused before a (possibly multi-GB) file is opened.
  if (auto out = a.get("--out")) check_output_file("--out", *out);

  const GgufFile f = GgufFile::open(a.positionals()[0]);
  print_summary(f);
  if (a.has("--metadata")) print_metadata(f);
  if (a.has("--tensors")) print_tensors(f);
  if (auto name = a.get("--dump-tensor")) {
    const GgufTensorInfo& info = f.tensor(*name);
    const Tensor t = f.read_tensor(*name);
    const std::string out = a.require("--out");
    write_npy(out, t, DType::F32);
    std::printf("\nwrote %s: %s %s float32 (from %s)\n", printable(out).c_str(),
                printable(info.name).c_str(), shape_str(t.shape).c_str(), info.type_name.c_str());
  }
  return 0;
}

}  // namespace atlas::cli
