#pragma once
// llama.cpp GGUF files as engine models: the architecture metadata mapped to a ModelConfig and
// the tensors renamed to the engine's names, so every view, the dump and the Vulkan backend work
// on them as on any model. Matrices stay in the file's encoding, read in place from the mapping
// (core/formats/packed_weights.h); vectors are converted to float32.
//   general.architecture "llama" (Llama 1-3, Mistral, TinyLlama, SmolLM), "qwen2", "gemma",
//   "phi3"
// llama.cpp's converter permutes the q and k rows of "llama" so that adjacent dimensions
// (2i, 2i + 1) rotate together; the engine then rotates with pairing "adjacent", which gives
// the same scores as Hugging Face's rotate_half on the original rows (REFERENCES.md). The other
// architectures keep rotate_half ("half"). Gemma's norms are stored with the 1 already added.
// Llama 3.1's frequency factors (rope_freqs.weight) are recognised as llama3 scaling or refused.
#include <string>

#include "core/config/config.h"
#include "core/formats/gguf.h"
#include "core/formats/model_header.h"
#include "core/model/load_monitor.h"
#include "core/model/model.h"
#include "core/model/params.h"

namespace atlas {

struct GgufLoadOptions {
  bool tokenizer = true;  // false: keep the bytes tokenizer (tests give ids directly)
  const LoadMonitor* monitor = nullptr;  // progress and cancellation (core/model/load_monitor.h)
};

// The engine config the file's metadata describes (no tensor data is read). Every error names
// the file and the key.
ModelConfig gguf_model_config(const GgufFile& file, const GgufLoadOptions& options = {});
// The weights as load_gguf_model holds them: matrices in the file's encoding, vectors as float32.
HeldPlan gguf_held_plan(const GgufFile& file);
// The config and that plan from the header alone (GgufFile::open_header: no tensor data is
// mapped or read, but Llama 3.1's small rope_freqs tensor).
ModelHeader read_gguf_model_header(const std::string& path, const GgufLoadOptions& options = {});
// Config plus every tensor, renamed; unknown or missing tensors are errors.
Model load_gguf_model(const std::string& path, const GgufLoadOptions& options = {});

}  // namespace atlas
