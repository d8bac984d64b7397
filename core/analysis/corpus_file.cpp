// The corpus text file (corpus_file.h).
#include "core/analysis/corpus_file.h"

#include <cstdio>

#include "core/tensor/error.h"

namespace atlas {

uint64_t fnv1a64(const void* data, size_t size, uint64_t h) {
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < size; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

std::string fingerprint_text(uint64_t h) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "fnv1a64:%016llx", static_cast<unsigned long long>(h));
  return buf;
}

CorpusFile::CorpusFile(const std::string& path)
    : path_(path), file_(path, "a text file, one document per line") {
  const auto* data = reinterpret_cast<const char*>(file_.data());
  const size_t size = file_.size();
  if (size == 0) throw AtlasError(path + ": is empty; a corpus holds one document per line");
  size_t begin = 0;
  while (begin < size) {
    size_t end = begin;
    while (end < size && data[end] != '\n') ++end;
    size_t stop = end;
    if (stop > begin && data[stop - 1] == '\r') --stop;  // a Windows line ending
    if (stop > begin) documents_.push_back({lines_, std::string_view(data + begin, stop - begin)});
    ++lines_;
    begin = end + 1;
  }
  if (documents_.empty())
    throw AtlasError(path + ": holds no document (all of its " + std::to_string(lines_) +
                     " lines are empty); a corpus holds one document per line");
  fingerprint_ = fingerprint_text(fnv1a64(data, size));
}

}  // namespace atlas
