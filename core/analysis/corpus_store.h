#pragma once
// A corpus folder on disk (docs/corpus.md): manifest.json, the commit point, holds what the
// run is (model, corpus file, settings, shards), how far it got, and the accumulated state;
// documents.jsonl the tokens of the documents the links point into; heads.csv, heads/*.npy
// and links.csv are views written from the state when a run stops or finishes.
//
// A checkpoint writes documents.jsonl holding every document of the old and the new state,
// then manifest.json, then documents.jsonl again without the documents no link points to any
// more; each file is replaced atomically (fsync + rename), so a kill at any moment leaves a
// manifest whose documents are all on disk.
#include <cstdint>
#include <string>
#include <vector>

#include "core/analysis/corpus_state.h"

namespace atlas {

constexpr int64_t kMaxCorpusTop = 10000;  // --top: keeps a 144-head model's manifest well below its cap
constexpr int64_t kMaxCorpusShards = 1 << 20;  // --shard K/N: N, far more than any job array

// What the results depend on. The model argument and corpus path are recorded as given; two
// runs are the same run when the fingerprints and sizes agree, wherever the files are.
struct CorpusIdentity {
  std::string model_argument, model_name, model_fingerprint;
  std::string token_join =
      "none";  // how labels read as text: "none" (they carry their spaces) or "spaces"
  std::string corpus_path, corpus_fingerprint;
  uint64_t corpus_bytes = 0;
  int64_t lines = 0, documents = 0;  // lines of the file; documents = its non-empty lines
  CorpusSettings settings;
  int64_t token_limit = 0;  // the limit in force: --max-tokens or the model's max_positions
};

struct CorpusIndex {
  CorpusIdentity identity;
  // The split: documents whose id % shard_count is in `shards`. A finished merge of every
  // shard is written as the unsplit run it equals (1, {0}).
  int64_t shard_count = 1;
  std::vector<int64_t> shards = {0};
  int64_t shard_documents = 0;  // documents of those shards
  // Every document of the shards with an id below next_line is measured or skipped.
  int64_t next_line = 0;
  CorpusAccumulator state;

  int64_t documents_done() const { return state.measured + int64_t(state.skipped.size()); }
  bool finished() const { return documents_done() == shard_documents; }
  bool complete() const { return finished() && int64_t(shards.size()) == shard_count; }
};

// The file names a corpus folder holds ("heads" is the folder of .npy views).
bool is_corpus_folder_entry(const std::string& name);

std::string encode_manifest(const CorpusIndex& index);
std::string encode_documents(const CorpusAccumulator& state);  // documents.jsonl

// Reads DIR/manifest.json and DIR/documents.jsonl. Throws AtlasError naming the file and what
// is wrong when either is missing, malformed, of another format or version, or inconsistent
// (a link to a document whose tokens are not there).
CorpusIndex read_corpus_folder(const std::string& dir);

// The checkpoint described above; drops unreferenced documents from `index.state`.
void commit_corpus_checkpoint(const std::string& dir, CorpusIndex& index);
// heads.csv, heads/<family>.<statistic>.npy and links.csv, each replaced atomically.
void write_corpus_views(const std::string& dir, const CorpusIndex& index);
// Removes the views (a fresh run in a folder whose manifest is gone).
void remove_corpus_views(const std::string& dir);

}  // namespace atlas
