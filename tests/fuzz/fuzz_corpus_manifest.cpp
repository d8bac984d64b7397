// libFuzzer target for a corpus run's manifest.json (core/analysis/corpus_store.h
// read_corpus_folder, with its exact sums and kept links): any input must either read or throw
// atlas::AtlasError. The input is written as the manifest of a scratch folder without a
// documents.jsonl (links then must not point into documents). What reads also writes its views
// (tables sized by the manifest's layer and head numbers) within libFuzzer's memory limit. Any
// other exception, crash, sanitizer report or memory blow-up is a bug.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/analysis/corpus_store.h"
#include "core/tensor/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("atlas-fuzz-corpus-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  {
    std::ofstream out(dir / "manifest.json", std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    const atlas::CorpusIndex index = atlas::read_corpus_folder(dir.string());
    atlas::write_corpus_views(dir.string(), index);
    volatile size_t sink = index.shards.size();
    (void)sink;
  } catch (const atlas::AtlasError&) {
  }
  return 0;
}
