#pragma once
// One policy for every file a user hands the app: look before opening (stat), accept regular
// files only, cap the size per kind of file, read with the cap, never block. A FIFO, device or
// socket given as a model, config, text or image is refused by name before it is opened, so a
// path like /dev/zero or a named pipe can neither hang a run nor fill memory.
// The caps are listed in docs/bad-input.md.
#include <cstdint>
#include <string>

namespace atlas {

enum class InputKind {
  ModelConfig,      // config.json of a model, --config, preprocessor_config.json
  TokenizerFile,    // tokenizer.json, vocab.json, merges.txt, vocab.txt, tokenizer_config.json
  WeightsIndex,     // model.safetensors.index.json
  Weights,          // *.safetensors (memory-mapped: only the type is checked, not the size)
  Text,             // --text-file, training text
  Image,            // --image
  Npy,              // .npy arrays
  DumpManifest,     // manifest.json of a trace dump
  TrainingState,    // training_state.json of a checkpoint
  Other,            // anything else read whole
};

struct InputLimit {
  const char* what;    // "model config", "tokenizer file", ... (for messages)
  uint64_t max_bytes;  // 0: no cap (memory-mapped files)
};

const InputLimit& input_limit(InputKind kind);

// The size of the regular file at `path`, or an AtlasError that names the path and the problem:
// missing, a folder, a FIFO/device/socket, a symlink loop, a path too long, permission denied,
// or larger than the kind's cap.
uint64_t check_input_file(const std::string& path, InputKind kind);

// The whole file, read without blocking and never more than the kind's cap (a file that grows
// past it while being read is refused too).
std::string read_input_file(const std::string& path, InputKind kind);

// "12.5 MB", "3 bytes": sizes in messages.
std::string format_bytes(uint64_t bytes);

}  // namespace atlas
