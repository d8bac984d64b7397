#pragma once
// Hugging Face model directories: config.json with "model_type" plus model.safetensors
// (or shards listed in model.safetensors.index.json), converted into an ordinary engine model
// (ModelConfig + ParamStore in the engine's own tensor names, docs/model-format.md), so every
// view, the dump and the Vulkan backend work on it unchanged. Families: GPT-2 ("gpt2":
// gpt2, gpt2-medium/large/xl, distilgpt2), BERT ("bert") and DistilBERT ("distilbert"), with
// their masked-LM heads when present, and ViT ("vit", image classification).
// The tokenizer comes from the directory's own files (core/formats/hf/hf_tokenizer_files.h).
#include <map>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/formats/model_header.h"
#include "core/model/model.h"
#include "core/model/params.h"

namespace atlas {

struct HfLoadOptions {
  bool tokenizer = true;  // false: skip the tokenizer files (keeps the bytes tokenizer)
  const LoadMonitor* monitor = nullptr;  // progress and cancellation (core/model/load_monitor.h)
};

struct HfCheckpoint {
  ModelConfig config;
  ParamStore params;                  // engine names, float32
  std::vector<std::string> skipped;   // HF tensors deliberately not loaded (buffers, heads)
  double read_share = 0.5;  // of a monitored load (HfLoadOptions::monitor): the reading's part
};

// True when DIR/config.json exists and has a "model_type" key (an Attention Atlas config never
// has one, so the two kinds of directory cannot be confused).
bool is_hf_directory(const std::string& dir);

// config.json (and the tokenizer files, preprocessor_config.json) alone, no weights: the
// engine config the directory describes. Every error names the file and the problem.
ModelConfig read_hf_config(const std::string& dir, const HfLoadOptions& options = {});

// Reads and converts; every error names the file and the problem.
HfCheckpoint read_hf_checkpoint(const std::string& dir, const HfLoadOptions& options = {});
// The config (config.json and tokenizer files) and the weights as the loader will hold them,
// from the safetensors headers (model_header.h); no tensor data is read. The output head is
// described as config.json gives it (loading drops a head the weights lack).
ModelHeader read_hf_model_header(const std::string& dir, const HfLoadOptions& options = {});
Model load_hf_directory(const std::string& dir, const HfLoadOptions& options = {});

// The HF tensors of a directory, keyed by their HF name, read from model.safetensors or from
// the shards of model.safetensors.index.json. `origin_of` receives the file of each tensor.
// Tensors for which `unread` holds are checked but not converted; their names go to `skipped`.
std::map<std::string, Tensor> read_hf_tensors(const std::string& dir,
                                              std::map<std::string, std::string>& origin_of,
                                              bool (*unread)(const std::string&) = nullptr,
                                              std::vector<std::string>* skipped = nullptr,
                                              bool (*keep_encoded)(const std::string&) = nullptr,
                                              const LoadMonitor* monitor = nullptr);

}  // namespace atlas
