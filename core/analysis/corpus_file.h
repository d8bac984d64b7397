#pragma once
// The text file a corpus run reads: one document per non-empty line. A document's id is its
// 0-based line number among all lines of the file (empty ones included), so an id means the
// same line in every shard and every run. The file is memory-mapped, never read whole into
// memory, so its size has no cap; it goes through the input-file policy first (a FIFO, device
// or folder is refused by name).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/formats/mapped_file.h"

namespace atlas {

struct CorpusDocument {
  int64_t id = 0;         // the line number, from 0
  std::string_view text;  // the line without its "\n" (and a "\r" before it)
};

class CorpusFile {
 public:
  // Throws AtlasError naming `path` when it is missing, not a regular file, or holds no
  // document (empty, or only empty lines).
  explicit CorpusFile(const std::string& path);
  CorpusFile(const CorpusFile&) = delete;
  CorpusFile& operator=(const CorpusFile&) = delete;

  const std::string& path() const { return path_; }
  uint64_t bytes() const { return file_.size(); }
  int64_t lines() const { return lines_; }
  const std::vector<CorpusDocument>& documents() const { return documents_; }  // by id
  // "fnv1a64:0123456789abcdef" of the file's bytes: the identity a resumed run and the shards
  // of a merge must share.
  const std::string& fingerprint() const { return fingerprint_; }

 private:
  std::string path_;
  MappedFile file_;
  int64_t lines_ = 0;
  std::vector<CorpusDocument> documents_;
  std::string fingerprint_;
};

// FNV-1a (64 bit), continued from `h`; and its text form "fnv1a64:<16 hex digits>".
uint64_t fnv1a64(const void* data, size_t size, uint64_t h = 0xcbf29ce484222325ull);
std::string fingerprint_text(uint64_t h);

}  // namespace atlas
