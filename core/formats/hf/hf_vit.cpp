// ViT from Hugging Face (google/vit-base-patch16-224 layout, modeling_vit.py): pre-norm
// encoder, LayerNorm eps 1e-12, GELU (erf), qkv bias; the Conv2d patch projection
// [d, channels, P, P] is the linear map embed.patch.weight [d, channels*P*P] of the flattened
// patch; cls_token [1, 1, d] and position_embeddings [1, N + 1, d]; final vit.layernorm;
// ViTForImageClassification's classifier [labels, d] + bias on every position (the CLS row
// is the prediction). Labels come from config.json's id2label; preprocessing from
// preprocessor_config.json (or ViTImageProcessor's defaults: 224, BILINEAR, mean = std = 0.5).
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/formats/input_file.h"
#include "core/formats/json_text.h"
#include "core/tensor/error.h"
#include "core/formats/hf/hf_families.h"

namespace atlas::hf {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kMaxLabels = 1000000;
constexpr int64_t kMaxVitImageSize = 4096;

// "id2label": {"0": "tench", ...} -> labels by id; "LABEL_<i>" for ids it leaves out.
std::vector<std::string> vit_labels(const ConfigReader& r) {
  auto it = r.j.find("id2label");
  int64_t n = r.integer("num_labels", 0);
  if (n < 0 || n > kMaxLabels)
    r.refuse("num_labels " + std::to_string(n) + " is outside 0.." + std::to_string(kMaxLabels));
  std::map<int64_t, std::string> named;
  if (it != r.j.end() && !it->is_null()) {
    if (!it->is_object()) r.refuse("id2label must be an object {\"0\": \"label\", ...}");
    for (const auto& [key, value] : it->items()) {
      int64_t id = -1;
      try {
        size_t used = 0;
        id = std::stoll(key, &used);
        if (used != key.size()) id = -1;
      } catch (const std::exception&) {
      }
      if (id < 0 || id >= kMaxLabels) r.refuse("id2label key \"" + key + "\" is not a class id");
      if (!value.is_string()) r.refuse("id2label[\"" + key + "\"] must be a string");
      named[id] = value.get<std::string>();
      n = std::max(n, id + 1);
    }
  }
  if (n < 1) n = 2;  // PretrainedConfig's default num_labels
  std::vector<std::string> labels(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    labels[size_t(i)] = named.count(i) ? named[i] : "LABEL_" + std::to_string(i);
  return labels;
}

std::vector<float> three_floats(const ConfigReader& p, const char* key, std::vector<float> fallback,
                                int64_t channels) {
  auto it = p.j.find(key);
  if (it == p.j.end() || it->is_null()) return fallback;
  std::vector<float> out;
  if (it->is_number()) out.assign(size_t(channels), it->get<float>());
  else if (it->is_array())
    for (const auto& v : *it) {
      if (!v.is_number()) p.refuse(std::string(key) + " must hold numbers, got " + v.dump());
      out.push_back(v.get<float>());
    }
  else p.refuse(std::string(key) + " must be a number or a list of numbers, got " + it->dump());
  if (int64_t(out.size()) != channels)
    p.refuse(std::string(key) + " has " + std::to_string(out.size()) + " values for " +
             std::to_string(channels) + " channels");
  return out;
}

// preprocessor_config.json (ViTImageProcessor) into the patch options.
void read_preprocessor(const ConfigReader& r, PatchOptions& p) {
  const fs::path file = fs::path(r.origin).parent_path() / "preprocessor_config.json";
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(file, ec))) return;  // ViTImageProcessor's defaults
  const std::string text = read_input_file(file.string(), InputKind::ModelConfig);
  Json j;
  try {
    j = parse_json_text(text, "", JsonLimits{128, false});
  } catch (const AtlasError& e) {
    throw AtlasError(file.string() + ": not valid JSON (" + e.what() + ")");
  }
  if (!j.is_object()) throw AtlasError(file.string() + ": not a JSON object");
  const ConfigReader pr{j, file.string()};
  if (!pr.boolean("do_resize", true))
    pr.refuse("do_resize false is not supported: the image must be resized to the model's size");
  if (auto it = j.find("size"); it != j.end() && !it->is_null()) {
    int64_t h = 0, w = 0;
    if (it->is_number_integer()) h = w = it->get<int64_t>();
    else if (it->is_object() && it->contains("height") && it->contains("width") &&
             (*it)["height"].is_number_integer() && (*it)["width"].is_number_integer()) {
      h = (*it)["height"].get<int64_t>();
      w = (*it)["width"].get<int64_t>();
    } else {
      pr.refuse("size must be an integer or {\"height\": h, \"width\": w}, got " + it->dump());
    }
    if (h != w || h != p.image_size)
      pr.refuse("size " + std::to_string(w) + "x" + std::to_string(h) + " differs from the model's "
                "image_size " + std::to_string(p.image_size) + " (position embeddings are not "
                "interpolated)");
  }
  const int64_t resample = pr.integer("resample", 2);
  if (resample != 2)
    pr.refuse("resample " + std::to_string(resample) + " is not supported (only 2, PIL BILINEAR)");
  p.rescale = pr.boolean("do_rescale", true) ? float(pr.number("rescale_factor", 1.0 / 255.0)) : 1.0f;
  if (pr.boolean("do_normalize", true)) {
    p.mean = three_floats(pr, "image_mean", p.mean, p.channels);
    p.std = three_floats(pr, "image_std", p.std, p.channels);
  } else {
    p.mean.assign(size_t(p.channels), 0.0f);
    p.std.assign(size_t(p.channels), 1.0f);
  }
}

ModelConfig vit_config(const ConfigReader& r) {
  ModelConfig c;
  c.architecture = Architecture::Encoder;
  c.positional = Positional::Learned;
  c.scale_embedding = false;
  c.norm = NormKind::LayerNorm;
  c.norm_position = NormPosition::Pre;
  c.ffn_bias = true;
  c.output = OutputHead::Untied;
  c.head.bias = true;
  c.d_model = r.dimension("hidden_size", kMaxDModel);
  c.n_layers = r.dimension("num_hidden_layers", kMaxLayers);
  c.n_heads = r.dimension("num_attention_heads", kMaxHeads);
  c.d_ff = r.dimension("intermediate_size", kMaxDff);
  c.norm_eps = static_cast<float>(r.number("layer_norm_eps", 1e-12));
  c.activation = activation_from(r, "hidden_act", "gelu");
  c.attention_bias = r.boolean("qkv_bias", true);
  if (!c.attention_bias)
    r.refuse("qkv_bias false is not supported (the engine's attention biases come as a set)");
  PatchOptions& p = c.embeddings.patches;
  p.size = r.integer("patch_size", 16);
  p.image_size = r.integer("image_size", 224);
  p.channels = r.integer("num_channels", 3);
  if (p.image_size < 1 || p.image_size > kMaxVitImageSize)
    r.refuse("image_size " + std::to_string(p.image_size) + " is outside 1.." +
             std::to_string(kMaxVitImageSize));
  if (p.size < 1 || p.image_size % p.size != 0)
    r.refuse("image_size " + std::to_string(p.image_size) + " is not a multiple of patch_size " +
             std::to_string(p.size));
  if (p.channels != 3) r.refuse("num_channels must be 3 (RGB), got " + std::to_string(p.channels));
  c.max_positions = p.patch_count() + 1;
  read_preprocessor(r, p);
  c.tokenizer.kind = TokenizerKind::Labels;
  c.tokenizer.vocab = vit_labels(r);
  c.vocab_size = static_cast<int64_t>(c.tokenizer.vocab.size());
  return c;
}

Tensor reshaped(Tensor t, Shape shape) {
  t.shape = std::move(shape);
  return t;
}

void vit_params(ModelConfig& c, TensorSource& src, ParamStore& out) {
  const int64_t d = c.d_model, f = c.d_ff, P = c.embeddings.patches.size;
  const int64_t ch = c.embeddings.patches.channels;
  out["embed.patch.weight"] = reshaped(
      src.take("embeddings.patch_embeddings.projection.weight", {d, ch, P, P}), {d, ch * P * P});
  out["embed.patch.bias"] = src.take("embeddings.patch_embeddings.projection.bias", {d});
  out["embed.cls"] = reshaped(src.take("embeddings.cls_token", {1, 1, d}), {d});
  out["embed.positions"] =
      reshaped(src.take("embeddings.position_embeddings", {1, c.max_positions, d}), {c.max_positions, d});
  auto ln = [&](const std::string& hf, const std::string& engine) {
    out[engine + ".gamma"] = src.take(hf + ".weight", {d});
    out[engine + ".beta"] = src.take(hf + ".bias", {d});
  };
  auto lin = [&](const std::string& hf, const std::string& w, const std::string& b, int64_t o, int64_t i) {
    out[w] = src.take(hf + ".weight", {o, i});
    out[b] = src.take(hf + ".bias", {o});
  };
  for (int64_t i = 0; i < c.n_layers; ++i) {
    const std::string h = "encoder.layer." + std::to_string(i), p = "encoder.layer" + std::to_string(i);
    ln(h + ".layernorm_before", p + ".attn_norm");
    lin(h + ".attention.attention.query", p + ".attn.wq", p + ".attn.bq", d, d);
    lin(h + ".attention.attention.key", p + ".attn.wk", p + ".attn.bk", d, d);
    lin(h + ".attention.attention.value", p + ".attn.wv", p + ".attn.bv", d, d);
    lin(h + ".attention.output.dense", p + ".attn.wo", p + ".attn.bo", d, d);
    ln(h + ".layernorm_after", p + ".ffn_norm");
    lin(h + ".intermediate.dense", p + ".ffn.w1", p + ".ffn.b1", f, d);
    lin(h + ".output.dense", p + ".ffn.w2", p + ".ffn.b2", d, f);
  }
  ln("layernorm", "encoder.final_norm");
  if (src.has("classifier.weight")) {  // ViTForImageClassification
    lin("classifier", "output.weight", "output.bias", c.vocab_size, d);
  } else {  // ViTModel: hidden states only
    c.output = OutputHead::None;
    c.head.bias = false;
  }
}

bool vit_skippable(const std::string& name) {
  return name.rfind("pooler.", 0) == 0 || name.rfind("vit.pooler.", 0) == 0;
}

}  // namespace

Family vit_family() { return {"vit", {"vit."}, vit_config, vit_params, vit_skippable}; }

}  // namespace atlas::hf
