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
  Workspace,        // a .atlas workspace of the app
  SystemFile,       // /proc and /sys files (meminfo, cgroup limits)
  Cache,            // the app's own caches (the Vulkan pipeline cache)
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

// A regular file opened under the same policy (stat, regular files only, opened with
// O_NONBLOCK, checked again on the descriptor, size capped), for readers that take part of a
// file: the header of a multi-GB weights file without its tensors, or a memory mapping
// (mapped_file.h). The descriptor is closed with the object.
class InputFile {
 public:
  InputFile(const std::string& path, InputKind kind);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  const std::string& path() const { return path_; }
  uint64_t size() const { return size_; }  // when opened
  int fd() const { return fd_; }
  // Bytes [offset, offset + length) of the file; fewer only where the file ends.
  std::string read_at(uint64_t offset, uint64_t length) const;

 private:
  std::string path_;
  uint64_t size_ = 0;
  int fd_ = -1;
};

// "12.5 MB", "3 bytes": sizes in messages.
std::string format_bytes(uint64_t bytes);

}  // namespace atlas
