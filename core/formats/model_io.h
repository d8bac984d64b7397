#pragma once
// Loading and saving models. A model spec is one of:
//   preset:NAME                 built-in preset, weights initialised from the config's seed
//   demo:NAME                   built-in trained demo model (assets/demos, core/model/demos.h)
//   DIR                         directory with config.json + model.safetensors
//   FILE.safetensors            single file whose __metadata__ "config" holds the config JSON
// Format documented in docs/model-format.md.
#include <cstdint>
#include <optional>
#include <string>

#include "core/model/load_monitor.h"
#include "core/model/model.h"

namespace atlas {

struct LoadOptions {
  std::optional<uint64_t> seed;  // overrides the preset's seed (presets only)
  // Progress and cancellation of a long load (the app's progress bar); null: none.
  const LoadMonitor* monitor = nullptr;
};

Model load_model(const std::string& spec, const LoadOptions& options = {});
// Writes DIR/config.json and DIR/model.safetensors (F32) as a whole: into a temporary sibling
// folder that then replaces DIR (core/formats/output_folder.h), so a failed write leaves an
// earlier model in DIR loadable. DIR may be missing, empty or a model folder (see below).
void save_model(const Model& model, const std::string& dir);
// The two files into an existing folder (a checkpoint's staging folder), each atomically.
void write_model_files(const Model& model, const std::string& dir);
// Whether save_model may write DIR: true when DIR holds a model folder (only config.json,
// model.safetensors and a checkpoint's optimizer.safetensors and train_state.json), which it
// would replace; false when DIR is missing or empty. A folder holding anything else is never
// replaced: AtlasError naming DIR and the first other file.
bool check_model_destination(const std::string& dir);
bool is_model_folder_file(const std::string& name);

}  // namespace atlas
