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

#include "core/model/model.h"

namespace atlas {

struct LoadOptions {
  std::optional<uint64_t> seed;  // overrides the preset's seed (presets only)
};

Model load_model(const std::string& spec, const LoadOptions& options = {});
// Writes DIR/config.json and DIR/model.safetensors (F32), creating DIR.
void save_model(const Model& model, const std::string& dir);

}  // namespace atlas
