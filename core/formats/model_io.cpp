#include "core/formats/model_io.h"

#include <filesystem>

#include "core/model/demos.h"
#include "core/formats/atomic_file.h"
#include "core/formats/model_header.h"
#include "core/formats/output_folder.h"
#include "core/tensor/error.h"
#include "core/formats/gguf_model.h"
#include "core/formats/hf/hf_checkpoint.h"
#include "core/model/memory_budget.h"
#include "core/model/presets.h"
#include "core/formats/safetensors.h"

namespace atlas {

namespace fs = std::filesystem;

namespace {

// Every loader sizes the weights from the headers first (model_header.h) and refuses, before
// reading a byte of them, a model that would not fit (check_weights_memory).
void check_fits(const ModelHeader& h) {
  check_weights_memory(h.held.bytes(), h.origin, h.held.detail(), h.advice);
}

// Our float32 files are copied while read (the first half of a monitored load), then scanned.
Model load_directory(const fs::path& dir, const LoadMonitor* monitor) {
  // Hugging Face directories (config.json with "model_type") are converted.
  if (is_hf_directory(dir.string())) {
    HfLoadOptions hf;
    hf.monitor = monitor;
    return load_hf_directory(dir.string(), hf);
  }
  ModelHeader h = own_directory_header(dir.string());
  check_fits(h);
  load_step(monitor, "Reading weights", 0, 1);
  SafetensorsFile file = read_safetensors(h.origin);
  check_param_shapes(h.config, file.tensors, h.origin);  // names the file in errors
  const LoadMonitor scan = monitor ? monitor->part(0.5, 1.0) : LoadMonitor{};
  return Model(std::move(h.config), std::move(file.tensors), monitor ? &scan : nullptr);
}

Model load_single_file(const fs::path& path, const LoadMonitor* monitor) {
  ModelHeader h = own_file_header(path.string());
  check_fits(h);
  load_step(monitor, "Reading weights", 0, 1);
  SafetensorsFile file = read_safetensors(path.string());
  check_param_shapes(h.config, file.tensors, path.string());
  const LoadMonitor scan = monitor ? monitor->part(0.5, 1.0) : LoadMonitor{};
  return Model(std::move(h.config), std::move(file.tensors), monitor ? &scan : nullptr);
}

}  // namespace

Model load_model(const std::string& spec, const LoadOptions& options) {
  if (spec.rfind("preset:", 0) == 0) {
    ModelHeader h = preset_header(spec.substr(7));
    if (options.seed) h.config.seed = *options.seed;
    check_fits(h);
    load_step(options.monitor, "Initialising weights", 0, 1);
    ParamStore params = init_params(h.config, h.config.seed);
    return Model(std::move(h.config), std::move(params), options.monitor);
  }
  if (options.seed)
    throw AtlasError("--seed applies to presets only; " + spec + " has trained weights");
  if (spec.rfind("demo:", 0) == 0) {  // trained demo embedded from assets/demos (core/model/demos.h)
    ModelHeader h = demo_header(spec);
    check_fits(h);
    const EmbeddedDemo& demo = find_demo(spec.substr(5));
    SafetensorsFile file = parse_safetensors(
        reinterpret_cast<const uint8_t*>(demo.safetensors.data()), demo.safetensors.size(),
        spec + " (model.safetensors)");
    check_param_shapes(h.config, file.tensors, spec);
    return Model(std::move(h.config), std::move(file.tensors), options.monitor);
  }
  check_model_path(spec);
  const fs::path path(spec);
  if (fs::is_directory(path)) return load_directory(path, options.monitor);
  if (path.extension() == ".gguf") {  // llama.cpp (gguf_model.h)
    GgufLoadOptions gguf;
    gguf.monitor = options.monitor;
    return load_gguf_model(spec, gguf);
  }
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
