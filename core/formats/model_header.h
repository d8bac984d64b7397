#pragma once
// What a model holds, read from its headers only: the engine config and the weights as the
// loader will hold them (matrices kept in the file's encoding count their encoded bytes, the
// rest 4 bytes a value), without reading, mapping or converting any tensor's data. `atlas info`
// prints it, and every loader checks it against the memory budget (check_weights_memory,
// core/model/memory_budget.h) before it reads a byte of weights.
//   preset:NAME  the config and its parameter specs (float32)
//   demo:NAME    the embedded config and safetensors header
//   DIR          config.json + the header of model.safetensors (ours), or a Hugging Face
//                folder: config.json, tokenizer files, and the safetensors headers (of every
//                shard the index lists)
//   FILE.gguf    the GGUF metadata and tensor table (GgufFile::open_header)
//   FILE         a single .safetensors file: its header and the config in __metadata__
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/formats/packed_weights.h"
#include "core/tensor/tensor.h"

namespace atlas {

struct HeldTensorInfo {
  std::string name;  // as the file names it
  Shape shape;
  std::string type;  // "F32", "BF16", "Q4_K", ...: the encoding it is held in
  double bytes = 0;
};

struct HeldPlan {
  std::vector<HeldTensorInfo> tensors;
  double bytes() const;
  // "4.6 GB of Q4_K matrices, 0.5 MB of float32 vectors": what the bytes are made of.
  std::string detail() const;
  HeldWeights summary() const;  // per encoding, as held_weights() of the loaded model
};

struct ModelHeader {
  ModelConfig config;
  HeldPlan held;
  std::string origin;  // the file or folder that holds the weights ("preset:NAME" for a preset)
  std::string advice;  // what would fit when the weights do not (check_weights_memory)
};

// Throws AtlasError naming the file for a missing or malformed model, as load_model would.
ModelHeader read_model_header(const std::string& spec);

// The parts the loaders share (model_io.cpp). A path that cannot be a model (missing, a
// config.json alone, a PyTorch pickle) is refused by check_model_path. Presets, demos, and our
// own model folder and single file, whose every tensor is converted to float32:
void check_model_path(const std::string& spec);
ModelHeader preset_header(const std::string& name);
ModelHeader demo_header(const std::string& spec);  // "demo:NAME"
ModelHeader own_directory_header(const std::string& dir);
ModelHeader own_file_header(const std::string& path);
HeldPlan float32_plan(const std::vector<HeldTensorInfo>& tensors);  // every tensor as F32
// "at 4 bytes a parameter ...": advice for loaders that convert every tensor to float32.
extern const char* const kFloat32Advice;

}  // namespace atlas
