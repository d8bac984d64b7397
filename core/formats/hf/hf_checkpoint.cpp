// Hugging Face directory loader (hf_checkpoint.h): config.json -> family mapping
// (hf_config.cpp, hf_gpt2.cpp, hf_bert.cpp, hf_vit.cpp) -> ModelConfig; model.safetensors or
// its shards -> engine tensors (hf_tensor_source.cpp).
#include "core/formats/hf/hf_checkpoint.h"

#include <functional>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "core/formats/input_file.h"
#include "core/formats/json_text.h"
#include "core/tensor/error.h"
#include "core/formats/hf/hf_families.h"
#include "core/formats/hf/hf_tokenizer_files.h"
#include "core/formats/safetensors.h"
#include "core/formats/model_header.h"
#include "core/model/memory_budget.h"
#include "core/model/params.h"

namespace atlas {

namespace fs = std::filesystem;

namespace {

std::string pickle_advice(const fs::path& dir, const std::string& file) {
  return (dir / file).string() +
         " is a PyTorch pickle, which is not read (unpickling can run arbitrary code), and "
         "the directory has no model.safetensors. Convert it once with Python: "
         "python -c \"from transformers import AutoModel; m = AutoModel.from_pretrained('" +
         dir.string() + "'); m.save_pretrained('" + dir.string() +
         "', safe_serialization=True)\"";
}

// The safetensors files of a folder: model.safetensors, or the shards
// model.safetensors.index.json lists, each with the tensors the index places in it.
struct WeightFiles {
  fs::path index;  // empty for a single file
  std::map<std::string, std::vector<std::string>> by_shard;  // file name -> tensors it must hold
};

WeightFiles weight_files(const fs::path& dir) {
  const fs::path single = dir / "model.safetensors";
  const fs::path index = dir / "model.safetensors.index.json";
  WeightFiles out;
  if (fs::exists(single)) {
    out.by_shard["model.safetensors"] = {};
    return out;
  }
  if (!fs::exists(index)) {
    for (const char* pickle : {"pytorch_model.bin", "pytorch_model.bin.index.json"})
      if (fs::exists(dir / pickle)) throw AtlasError(pickle_advice(dir, pickle));
    throw AtlasError(dir.string() + ": no model.safetensors and no model.safetensors.index.json "
                     "(the weights of a Hugging Face model directory)");
  }
  out.index = index;
  const std::string index_text = read_input_file(index.string(), InputKind::WeightsIndex);
  nlohmann::json j;
  try {
    j = parse_json_text(index_text, "", JsonLimits{128, false});
  } catch (const AtlasError& e) {
    throw AtlasError(index.string() + ": not valid JSON (" + e.what() + ")");
  }
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
    throw AtlasError(index.string() + ": no \"weight_map\" object (tensor name -> shard file)");
  for (const auto& [name, shard] : j["weight_map"].items()) {
    if (!shard.is_string())
      throw AtlasError(index.string() + ": weight_map entry for " + name + " is not a file name");
    const std::string file = shard.get<std::string>();
    if (file.find('/') != std::string::npos || file.find("..") != std::string::npos)
      throw AtlasError(index.string() + ": shard name \"" + file +
                       "\" must be a file in the same directory");
    out.by_shard[file].push_back(name);
  }
  for (const auto& [file, names] : out.by_shard)
    if (!fs::exists(dir / file))
      throw AtlasError((dir / file).string() + ": missing shard (listed in " + index.string() +
                       " for " + std::to_string(names.size()) + " tensors, e.g. " + names.front() + ")");
  return out;
}

// What the loader will hold, from the safetensors headers alone: a tensor the family never reads
// takes nothing, a 16-bit matrix the family keeps as stored takes its bytes, the rest is
// converted to float32 (read_safetensors' rules).
HeldPlan hf_held_plan(const fs::path& dir, const hf::Family& family) {
  HeldPlan plan;
  for (const auto& [file, names] : weight_files(dir).by_shard) {
    for (const auto& t : read_safetensors_header((dir / file).string()).tensors) {
      if (family.unread && family.unread(t.name)) continue;
      const bool sixteen_bit = t.dtype == "F16" || t.dtype == "BF16";
      if (family.keep_encoded && sixteen_bit && t.shape.size() == 2 && family.keep_encoded(t.name))
        plan.tensors.push_back({t.name, t.shape, t.dtype, double(t.bytes)});
      else
        plan.tensors.push_back({t.name, t.shape, "F32", 4.0 * double(numel_of(t.shape))});
    }
  }
  return plan;
}

std::string hf_advice(const hf::Family& family) {
  return family.keep_encoded ? std::string(kQuantizeAdvice) : std::string(kFloat32Advice);
}

}  // namespace

bool is_hf_directory(const std::string& dir) {
  const fs::path config = fs::path(dir) / "config.json";
  if (!fs::is_regular_file(config)) return false;
  try {
    nlohmann::json j = parse_json_text(hf::read_text(config.string()), "", JsonLimits{128, false});
    return j.is_object() && j.contains("model_type");
  } catch (const AtlasError&) {
    return false;  // the regular loader reports the error
  }
}

std::map<std::string, Tensor> read_hf_tensors(const std::string& dir_str,
                                              std::map<std::string, std::string>& origin_of,
                                              bool (*unread)(const std::string&),
                                              std::vector<std::string>* skipped,
                                              bool (*keep_encoded)(const std::string&),
                                              const LoadMonitor* monitor) {
  std::function<bool(const std::string&)> skip, keep;
  if (unread) skip = unread;
  if (keep_encoded) keep = keep_encoded;
  auto note_unread = [&](const SafetensorsFile& f) {
    if (skipped)
      for (const auto& [name, shape] : f.unread) skipped->push_back(name);
  };
  const fs::path dir(dir_str);
  const WeightFiles files = weight_files(dir);
  std::map<std::string, Tensor> tensors;
  if (files.index.empty()) {
    const std::string single = (dir / "model.safetensors").string();
    load_step(monitor, "Reading weights", 0, 1);
    SafetensorsFile f = read_safetensors(single, skip, keep);
    note_unread(f);
    for (auto& [name, t] : f.tensors) origin_of[name] = single;
    return std::move(f.tensors);
  }
  const std::string index = files.index.string();
  double shards_read = 0;
  for (const auto& [file, names] : files.by_shard) {
    load_step(monitor, "Reading weights", shards_read++, double(files.by_shard.size()));
    const fs::path path = dir / file;
    SafetensorsFile f = read_safetensors(path.string(), skip, keep);
    note_unread(f);
    for (const std::string& name : names)
      if (!f.tensors.count(name) && !f.unread.count(name))
        throw AtlasError(path.string() + ": has no tensor " + name + ", which " +
                         index + " places in this shard");
    for (auto& [name, t] : f.tensors) {
      if (tensors.count(name))
        throw AtlasError(path.string() + ": tensor " + name + " is also in " + origin_of[name]);
      origin_of[name] = path.string();
      tensors[name] = std::move(t);
    }
  }
  return tensors;
}

HfCheckpoint read_hf_checkpoint(const std::string& dir_str, const HfLoadOptions& options) {
  const fs::path dir(dir_str);
  hf::ConfigStage stage = hf::read_config_stage(dir_str, options);
  const std::string config_path = stage.config_path;
  HfCheckpoint out;
  out.config = std::move(stage.config);
  const hf::Family* family = stage.family;
  out.read_share = family->keep_encoded ? 0.1 : 0.5;
  const HeldPlan plan = hf_held_plan(dir, *family);
  check_weights_memory(plan.bytes(), dir.string(),
                       plan.detail() + (family->keep_encoded ? "; 16-bit matrices kept as stored"
                                                             : "; every tensor as float32"),
                       hf_advice(*family));
  std::map<std::string, std::string> origin_of;
  std::vector<std::string> unread;
  // Matrices kept encoded are only mapped here; converted ones are copied, which takes a while.
  const LoadMonitor reading = options.monitor ? options.monitor->part(0, out.read_share) : LoadMonitor{};
  std::map<std::string, Tensor> raw = read_hf_tensors(dir.string(), origin_of, family->unread, &unread,
                                                       family->keep_encoded, options.monitor ? &reading : nullptr);
  hf::TensorSource source(std::move(raw), std::move(origin_of), family->prefixes,
                          config_path);
  family->params(out.config, source, out.params);
  out.skipped = source.leftovers(family->skippable);
  out.skipped.insert(out.skipped.end(), unread.begin(), unread.end());
  validate_config(out.config, config_path);  // params may have dropped a head
  check_param_shapes(out.config, out.params, dir.string());  // the mapping is complete
  return out;
}

ModelHeader read_hf_model_header(const std::string& dir, const HfLoadOptions& options) {
  hf::ConfigStage stage = hf::read_config_stage(dir, options);
  ModelHeader h;
  h.config = std::move(stage.config);
  h.held = hf_held_plan(fs::path(dir), *stage.family);
  h.origin = dir;
  h.advice = hf_advice(*stage.family);
  return h;
}

Model load_hf_directory(const std::string& dir, const HfLoadOptions& options) {
  HfCheckpoint c = read_hf_checkpoint(dir, options);
  const LoadMonitor scan = options.monitor ? options.monitor->part(c.read_share, 1.0) : LoadMonitor{};
  return Model(std::move(c.config), std::move(c.params), options.monitor ? &scan : nullptr);
}

}  // namespace atlas
