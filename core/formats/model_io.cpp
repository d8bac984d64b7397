#include "core/formats/model_io.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/model/demos.h"
#include "core/formats/atomic_file.h"
#include "core/formats/input_file.h"
#include "core/formats/output_folder.h"
#include "core/tensor/error.h"
#include "core/formats/gguf_model.h"
#include "core/formats/hf/hf_checkpoint.h"
#include "core/model/presets.h"
#include "core/formats/safetensors.h"

namespace atlas {

namespace fs = std::filesystem;

namespace {

std::string read_model_text(const fs::path& path) {
  return read_input_file(path.string(), InputKind::ModelConfig);
}

Model load_directory(const fs::path& dir, const LoadMonitor* monitor) {
  // Hugging Face directories (config.json with "model_type") are converted.
  if (is_hf_directory(dir.string())) {
    HfLoadOptions hf;
    hf.monitor = monitor;
    return load_hf_directory(dir.string(), hf);
  }
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
  ModelConfig config = parse_config(read_model_text(config_path), config_path.string());
  if (config.name.empty()) config.name = dir.filename().string();
  load_step(monitor, "Reading weights", 0, 1);
  SafetensorsFile file = read_safetensors(weights_path.string());
  check_param_shapes(config, file.tensors, weights_path.string());  // names the file in errors
  const LoadMonitor scan = monitor ? monitor->part(0.5, 1.0) : LoadMonitor{};
  return Model(std::move(config), std::move(file.tensors), monitor ? &scan : nullptr);
}

Model load_single_file(const fs::path& path, const LoadMonitor* monitor) {
  load_step(monitor, "Reading weights", 0, 1);
  SafetensorsFile file = read_safetensors(path.string());
  auto it = file.metadata.find("config");
  if (it == file.metadata.end())
    throw AtlasError(path.string() + ": __metadata__ has no \"config\" entry; a single-file "
                     "model stores its config JSON there (or use a directory with config.json)");
  ModelConfig config = parse_config(it->second, path.string() + " (__metadata__.config)");
  if (config.name.empty()) config.name = path.stem().string();
  check_param_shapes(config, file.tensors, path.string());
  const LoadMonitor scan = monitor ? monitor->part(0.5, 1.0) : LoadMonitor{};
  return Model(std::move(config), std::move(file.tensors), monitor ? &scan : nullptr);
}

}  // namespace

Model load_model(const std::string& spec, const LoadOptions& options) {
  if (spec.rfind("preset:", 0) == 0) {
    ModelConfig config = preset_config(spec.substr(7));
    if (options.seed) config.seed = *options.seed;
    load_step(options.monitor, "Initialising weights", 0, 1);
    ParamStore params = init_params(config, config.seed);
    return Model(std::move(config), std::move(params), options.monitor);
  }
  if (options.seed)
    throw AtlasError("--seed applies to presets only; " + spec + " has trained weights");
  if (spec.rfind("demo:", 0) == 0) {  // trained demo embedded from assets/demos (core/model/demos.h)
    const EmbeddedDemo& demo = find_demo(spec.substr(5));
    ModelConfig config = parse_config(demo.config_json, spec + " (config.json)");
    SafetensorsFile file = parse_safetensors(
        reinterpret_cast<const uint8_t*>(demo.safetensors.data()), demo.safetensors.size(),
        spec + " (model.safetensors)");
    check_param_shapes(config, file.tensors, spec);
    return Model(std::move(config), std::move(file.tensors), options.monitor);
  }
  const fs::path path(spec);
  if (!fs::exists(path))
    throw AtlasError(spec + ": no such file or directory (a model is a directory, a "
                     ".safetensors or .gguf file, preset:NAME or demo:NAME)");
  if (fs::is_directory(path)) return load_directory(path, options.monitor);
  if (path.extension() == ".gguf") {  // llama.cpp (gguf_model.h)
    GgufLoadOptions gguf;
    gguf.monitor = options.monitor;
    return load_gguf_model(spec, gguf);
  }
  if (path.extension() == ".json")  // read as safetensors it would fail on a nonsense header size
    throw AtlasError(spec + ": a config alone is not a model; give the folder that holds it as "
                     "config.json next to model.safetensors, or preset:NAME");
  if (path.extension() == ".bin" || path.extension() == ".pt" || path.extension() == ".pth")
    throw AtlasError(spec + ": PyTorch pickle files are not read, for safety; convert it to "
                     ".safetensors first");
  return load_single_file(path, options.monitor);
}

bool is_model_folder_file(const std::string& name) {
  return name == "config.json" || name == "model.safetensors" ||
         name == "optimizer.safetensors" || name == "train_state.json";
}

bool check_model_destination(const std::string& dir) {
  const FolderContents c = inspect_output_folder(dir, is_model_folder_file);
  if (!c.foreign.empty())
    throw AtlasError(dir + ": holds " + c.foreign + ", which is not part of a model folder; "
                     "nothing was changed (write the model to a new or empty folder)");
  return c.exists && !c.empty;
}

void write_model_files(const Model& model, const std::string& dir) {
  write_file_atomically((fs::path(dir) / "config.json").string(),
                        config_to_json(model.config()) + "\n");
  write_safetensors((fs::path(dir) / "model.safetensors").string(), model.params(),
                    {{"format", "attention-atlas"}});
}

void save_model(const Model& model, const std::string& dir) {
  check_model_destination(dir);
  replace_folder(dir, [&](const std::string& staging) { write_model_files(model, staging); });
}

}  // namespace atlas
