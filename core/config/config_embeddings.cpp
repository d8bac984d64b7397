// Config sections "embeddings" and "head" (config_json.h, config_embeddings.h).
#include "core/config/config_embeddings.h"

#include <cmath>

#include "core/config/config_json.h"

namespace atlas::config_json {
namespace {

constexpr int64_t kMaxTokenTypes = 65536;
constexpr int64_t kMaxImageSize = 4096;
constexpr int64_t kMaxChannels = 16;

std::vector<float> read_floats(const Json& v, const Reader& r, const std::string& key) {
  if (!v.is_array()) fail(r.origin, key + " must be an array of numbers, " + got(v));
  std::vector<float> out;
  for (size_t i = 0; i < v.size(); ++i) out.push_back(r.number(v[i], key + "[" + std::to_string(i) + "]"));
  return out;
}

void read_patches(const Json& o, const Reader& r, PatchOptions& p) {
  if (!o.is_object()) fail(r.origin, "embeddings.patches must be an object, " + got(o));
  check_known_keys(o, {"size", "image_size", "channels", "cls", "rescale", "mean", "std"},
                   "embeddings.patches", r.origin);
  if (auto it = o.find("size"); it != o.end()) p.size = r.integer(*it, "embeddings.patches.size");
  if (auto it = o.find("image_size"); it != o.end())
    p.image_size = r.integer(*it, "embeddings.patches.image_size");
  if (auto it = o.find("channels"); it != o.end())
    p.channels = r.integer(*it, "embeddings.patches.channels");
  if (auto it = o.find("cls"); it != o.end()) p.cls = r.boolean(*it, "embeddings.patches.cls");
  if (auto it = o.find("rescale"); it != o.end())
    p.rescale = r.number(*it, "embeddings.patches.rescale");
  if (auto it = o.find("mean"); it != o.end()) p.mean = read_floats(*it, r, "embeddings.patches.mean");
  if (auto it = o.find("std"); it != o.end()) p.std = read_floats(*it, r, "embeddings.patches.std");
}

void read_embeddings(const Json& o, const Reader& r, ModelConfig& c) {
  check_known_keys(o, {"token_types", "norm", "patches"}, "embeddings", r.origin);
  if (auto it = o.find("token_types"); it != o.end())
    c.embeddings.token_types = r.integer(*it, "embeddings.token_types");
  if (auto it = o.find("norm"); it != o.end()) c.embeddings.norm = r.boolean(*it, "embeddings.norm");
  if (auto it = o.find("patches"); it != o.end()) read_patches(*it, r, c.embeddings.patches);
}

OrderedJson write_embeddings(const ModelConfig& c) {
  OrderedJson j;
  j["token_types"] = c.embeddings.token_types;
  j["norm"] = c.embeddings.norm;
  const PatchOptions& p = c.embeddings.patches;
  if (p.enabled()) {
    OrderedJson pj;
    pj["size"] = p.size;
    pj["image_size"] = p.image_size;
    pj["channels"] = p.channels;
    pj["cls"] = p.cls;
    pj["rescale"] = shortest_float(p.rescale);
    std::vector<double> mean, std;
    for (float v : p.mean) mean.push_back(shortest_float(v));
    for (float v : p.std) std.push_back(shortest_float(v));
    pj["mean"] = mean;
    pj["std"] = std;
    j["patches"] = std::move(pj);
  }
  return j;
}

void validate_patches(const ModelConfig& c, const std::string& origin) {
  const PatchOptions& p = c.embeddings.patches;
  check_range(p.size, 0, kMaxImageSize, "embeddings.patches.size", origin);
  if (!p.enabled()) return;
  check_range(p.image_size, 1, kMaxImageSize, "embeddings.patches.image_size", origin);
  check_range(p.channels, 1, kMaxChannels, "embeddings.patches.channels", origin);
  if (p.image_size % p.size != 0)
    fail(origin, "embeddings.patches.image_size " + std::to_string(p.image_size) +
                     " is not a multiple of the patch size " + std::to_string(p.size));
  for (const auto* v : {&p.mean, &p.std})
    if (static_cast<int64_t>(v->size()) != p.channels)
      fail(origin, std::string("embeddings.patches.") + (v == &p.mean ? "mean" : "std") + " has " +
                       std::to_string(v->size()) + " values but the image has " +
                       std::to_string(p.channels) + " channels");
  for (float s : p.std)
    if (!(s > 0) || !std::isfinite(s))
      fail(origin, "embeddings.patches.std values must be finite and > 0, got " + format_float(s));
  for (float m : p.mean)
    if (!std::isfinite(m)) fail(origin, "embeddings.patches.mean values must be finite, got " + format_float(m));
  if (!(p.rescale > 0) || !std::isfinite(p.rescale))
    fail(origin, "embeddings.patches.rescale must be finite and > 0, got " + format_float(p.rescale));
  if (c.architecture != Architecture::Encoder)
    fail(origin, "embeddings.patches needs architecture \"encoder\" (a ViT)");
  if (c.positional != Positional::Learned)
    fail(origin, "embeddings.patches needs positional \"learned\" (one row per patch)");
  const int64_t tokens = p.patch_count() + (p.cls ? 1 : 0);
  if (c.max_positions != tokens)
    fail(origin, "an image of " + std::to_string(p.image_size) + "x" + std::to_string(p.image_size) +
                     " in patches of " + std::to_string(p.size) + " gives " + std::to_string(tokens) +
                     " tokens, so max_positions must be " + std::to_string(tokens) + ", got " +
                     std::to_string(c.max_positions));
  if (c.output == OutputHead::Tied)
    fail(origin, "an image model has no token embedding to tie its output to: use output "
                 "\"untied\" (a classifier) or \"none\"");
}

void validate_embeddings(const ModelConfig& c, const std::string& origin) {
  check_range(c.embeddings.token_types, 0, kMaxTokenTypes, "embeddings.token_types", origin);
  validate_patches(c, origin);
}

void read_head(const Json& o, const Reader& r, ModelConfig& c) {
  check_known_keys(o, {"transform", "bias"}, "head", r.origin);
  if (auto it = o.find("transform"); it != o.end()) c.head.transform = r.boolean(*it, "head.transform");
  if (auto it = o.find("bias"); it != o.end()) c.head.bias = r.boolean(*it, "head.bias");
}

OrderedJson write_head(const ModelConfig& c) {
  OrderedJson j;
  j["transform"] = c.head.transform;
  j["bias"] = c.head.bias;
  return j;
}

void validate_head(const ModelConfig& c, const std::string& origin) {
  if ((c.head.transform || c.head.bias) && c.output == OutputHead::None)
    fail(origin, "head.transform and head.bias need an output head; output is \"none\"");
}

}  // namespace

std::vector<ConfigSection> embedding_sections() {
  return {{"embeddings", read_embeddings, write_embeddings, validate_embeddings},
          {"head", read_head, write_head, validate_head}};
}

}  // namespace atlas::config_json
