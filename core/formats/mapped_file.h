#pragma once
// A read-only memory mapping of a whole weights file (safetensors, GGUF), unmapped on
// destruction. Mapping instead of reading lets a multi-GB checkpoint be converted straight from
// the page cache, without first being copied into a heap buffer. The file goes through the
// input-file policy (input_file.h) first, so a FIFO or device is refused before it is opened.
#include <sys/mman.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <string>
#include <system_error>

#include "core/formats/input_file.h"
#include "core/tensor/error.h"

namespace atlas {

class MappedFile {
 public:
  // `expected` names what the file should be in a failed mapping's message ("a .safetensors
  // file"). The descriptor is opened through InputFile and closed once mapped.
  explicit MappedFile(const std::string& path, const std::string& expected = "a file") {
    const InputFile file(path, InputKind::Weights);
    size_ = static_cast<size_t>(file.size());
    if (size_ == 0) return;  // mmap rejects empty mappings; the parser reports the short file
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, file.fd(), 0);
    if (p == MAP_FAILED) fail(path, "cannot memory-map " + expected + " (" + errno_message() + ")");
    addr_ = p;
    ::madvise(addr_, size_, MADV_SEQUENTIAL);  // a hint only; failure is harmless
  }
  ~MappedFile() {
    if (addr_) ::munmap(addr_, size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return static_cast<const uint8_t*>(addr_); }
  size_t size() const { return size_; }

 private:
  [[noreturn]] static void fail(const std::string& path, const std::string& message) {
    throw AtlasError(path + ": " + message);
  }
  static std::string errno_message() {
    return std::error_code(errno, std::generic_category()).message();
  }
  void* addr_ = nullptr;
  size_t size_ = 0;
};

}  // namespace atlas
