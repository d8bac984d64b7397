#include "core/formats/model_header.h"

#include <filesystem>
#include <map>

#include "core/formats/gguf_model.h"
#include "core/formats/hf/hf_checkpoint.h"
#include "core/formats/input_file.h"
#include "core/formats/safetensors.h"
#include "core/model/demos.h"
#include "core/model/params.h"
#include "core/model/presets.h"
#include "core/tensor/error.h"

namespace atlas {

namespace fs = std::filesystem;

const char* const kFloat32Advice =
    "Every parameter is held as float32 (4 bytes each); a smaller model fits, or this model "
    "quantized to a GGUF file (Q4_K_M needs about 0.6 bytes a parameter, Q8_0 about 1.1)";

double HeldPlan::bytes() const {
  double b = 0;
  for (const HeldTensorInfo& t : tensors) b += t.bytes;
  return b;
}

std::string HeldPlan::detail() const {
  std::map<std::string, double> matrices;
  double vectors = 0;
  for (const HeldTensorInfo& t : tensors) {
    if (t.shape.size() >= 2) matrices[t.type] += t.bytes;
    else vectors += t.bytes;
  }
  std::string s;
  for (const auto& [type, bytes] : matrices)
    s += (s.empty() ? "" : ", ") + format_bytes(uint64_t(bytes)) + " of " +
         (type == "F32" ? std::string("float32") : type) + " matrices";
  if (vectors > 0 || s.empty())
    s += (s.empty() ? "" : ", ") + format_bytes(uint64_t(vectors)) + " of float32 vectors";
  return s;
}

HeldWeights HeldPlan::summary() const {
  std::map<std::string, HeldWeights::Encoding> by_name;
  HeldWeights out;
  for (const HeldTensorInfo& t : tensors) {
    HeldWeights::Encoding& e = by_name[t.type];
    e.type = t.type;
    e.bytes += t.bytes;
    e.tensors += 1;
    out.total_bytes += t.bytes;
  }
  for (auto& [name, e] : by_name) {
    out.quantized |= name != "F32" && name != "F16" && name != "BF16";
    out.by_type.push_back(std::move(e));
  }
  return out;
}

HeldPlan float32_plan(const std::vector<HeldTensorInfo>& tensors) {
  HeldPlan plan;
  for (HeldTensorInfo t : tensors) {
    t.type = "F32";
    t.bytes = 4.0 * double(numel_of(t.shape));
    plan.tensors.push_back(std::move(t));
  }
  return plan;
}

namespace {

std::vector<HeldTensorInfo> header_tensors(const SafetensorsHeader& h) {
  std::vector<HeldTensorInfo> out;
  for (const auto& t : h.tensors) out.push_back({t.name, t.shape, t.dtype, double(t.bytes)});
  return out;
}

}  // namespace

ModelHeader preset_header(const std::string& name) {
  ModelHeader h;
  h.config = preset_config(name);
  std::vector<HeldTensorInfo> tensors;
  for (const ParamSpec& p : param_specs(h.config)) tensors.push_back({p.name, p.shape, "F32", 0});
  h.held = float32_plan(tensors);
  h.origin = "preset:" + name;
  h.advice = "A smaller preset fits (every parameter is initialised as float32, 4 bytes each)";
  return h;
}

ModelHeader demo_header(const std::string& spec) {
  const EmbeddedDemo& demo = find_demo(spec.substr(5));
  ModelHeader h;
  h.config = parse_config(demo.config_json, spec + " (config.json)");
  const auto* bytes = reinterpret_cast<const uint8_t*>(demo.safetensors.data());
  h.held = float32_plan(header_tensors(parse_safetensors_header(
      bytes, demo.safetensors.size(), demo.safetensors.size(), spec + " (model.safetensors)")));
  h.origin = spec;
  h.advice = kFloat32Advice;
  return h;
}

ModelHeader own_directory_header(const std::string& dir_name) {
  const fs::path dir(dir_name);
  const fs::path config_path = dir / "config.json";
  const fs::path weights_path = dir / "model.safetensors";
  if (!fs::exists(config_path))
    throw AtlasError(dir.string() + ": no config.json (a model directory holds config.json and "
                     "model.safetensors)");
  if (fs::exists(dir / "pytorch_model.bin") && !fs::exists(weights_path))
    throw AtlasError(dir.string() + ": pytorch_model.bin (pickle) is not read, for safety; "
                     "convert it to model.safetensors first");
  if (!fs::exists(weights_path))
    throw AtlasError(dir.string() + ": no model.safetensors next to config.json");
  ModelHeader h;
  h.config = parse_config(read_input_file(config_path.string(), InputKind::ModelConfig),
                          config_path.string());
  if (h.config.name.empty()) h.config.name = dir.filename().string();
  h.held = float32_plan(header_tensors(read_safetensors_header(weights_path.string())));
  h.origin = weights_path.string();
  h.advice = kFloat32Advice;
  return h;
}

ModelHeader own_file_header(const std::string& path_name) {
  const fs::path path(path_name);
  const SafetensorsHeader file = read_safetensors_header(path.string());
  auto it = file.metadata.find("config");
  if (it == file.metadata.end())
    throw AtlasError(path.string() + ": __metadata__ has no \"config\" entry; a single-file "
                     "model stores its config JSON there (or use a directory with config.json)");
  ModelHeader h;
  h.config = parse_config(it->second, path.string() + " (__metadata__.config)");
  if (h.config.name.empty()) h.config.name = path.stem().string();
  h.held = float32_plan(header_tensors(file));
  h.origin = path.string();
  h.advice = kFloat32Advice;
  return h;
}

void check_model_path(const std::string& spec) {
  const fs::path path(spec);
  if (!fs::exists(path))
    throw AtlasError(spec + ": no such file or directory (a model is a directory, a "
                     ".safetensors or .gguf file, preset:NAME or demo:NAME)");
  if (fs::is_directory(path) || path.extension() == ".gguf") return;
  if (path.extension() == ".json")  // read as safetensors it would fail on a nonsense header size
    throw AtlasError(spec + ": a config alone is not a model; give the folder that holds it as "
                     "config.json next to model.safetensors, or preset:NAME");
  if (path.extension() == ".bin" || path.extension() == ".pt" || path.extension() == ".pth")
    throw AtlasError(spec + ": PyTorch pickle files are not read, for safety; convert it to "
                     ".safetensors first");
}

ModelHeader read_model_header(const std::string& spec) {
  if (spec.rfind("preset:", 0) == 0) return preset_header(spec.substr(7));
  if (spec.rfind("demo:", 0) == 0) return demo_header(spec);
  check_model_path(spec);
  if (fs::is_directory(spec))
    return is_hf_directory(spec) ? read_hf_model_header(spec) : own_directory_header(spec);
  if (fs::path(spec).extension() == ".gguf") return read_gguf_model_header(spec);
  return own_file_header(spec);
}

}  // namespace atlas
