#pragma once
// Corpus mode (exBERT-style): a model run over a text file of many documents, one per
// non-empty line, accumulating head statistics (head_statistics.h, averaged over documents)
// and an index of the strongest (query, key) attention links per map and head, with progress,
// cancel, resume, shards and their merge. Files and choices: docs/corpus.md.
//
// Exactness: the state combines exactly in any order (corpus_state.h), so a run split into
// shards and merged, or stopped and resumed, writes the same bytes as one uninterrupted run.
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/analysis/corpus_store.h"
#include "core/model/model.h"

namespace atlas {

struct CorpusShard {
  int64_t index = 0, count = 1;  // documents whose id % count == index
};
// "K/N" with 0 <= K < N; throws AtlasError naming `flag` otherwise ("3/2", "abc", "1/0").
CorpusShard parse_corpus_shard(const std::string& text, const std::string& flag);

// "fnv1a64:..." over the config (tokenizer included) and every parameter's name, shape and
// bytes: two copies of a model in different places have the same fingerprint.
std::string model_fingerprint(const Model& model);

struct CorpusRunOptions {
  std::string model_argument;  // recorded as given
  std::string corpus_path;
  std::string out_dir;
  CorpusSettings settings;
  CorpusShard shard;
  const std::atomic<bool>* cancel = nullptr;  // stops after (or inside) the current document
  std::function<void(int64_t done, int64_t total)> progress;  // after each document of the shard
  // A checkpoint (corpus_store.h) after this many documents or seconds, whichever comes first.
  int64_t checkpoint_documents = 256;
  double checkpoint_seconds = 30;
};

struct CorpusRunResult {
  int64_t total = 0;        // documents of the shard
  int64_t done_before = 0;  // found done in the folder (a resumed run)
  int64_t done = 0;         // done now, measured or skipped
  int64_t measured = 0, skipped = 0;
  std::vector<CorpusSkip> skipped_now;  // skipped by this call
  bool cancelled = false;
  bool finished = false;  // every document of the shard is done
};

// Runs (or resumes) the corpus into options.out_dir. A new run needs a missing or empty
// folder (or one holding only a corpus run's files without a manifest); a folder holding a
// run of other arguments is refused with what differs. On cancel the state is saved and the
// result says cancelled; running the same call again continues where it stopped.
CorpusRunResult run_corpus(const Model& model, const CorpusRunOptions& options);

struct CorpusMergeResult {
  int64_t documents = 0;  // measured + skipped
  std::vector<int64_t> missing_shards;
  bool complete = false;
};
// Merges finished shard folders of one run into out_dir (written whole, replacing it). Refuses
// shards of different models, files, settings or splits, shards given twice or overlapping,
// unfinished shards, and missing shards unless allow_missing. out_dir may be missing, empty,
// or hold a finished result of the same run.
CorpusMergeResult merge_corpus(const std::string& out_dir,
                               const std::vector<std::string>& shard_dirs, bool allow_missing);

}  // namespace atlas
