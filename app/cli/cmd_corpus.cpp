// atlas corpus, atlas corpus-merge: a model over a text file of many documents, head
// statistics and the strongest attention links accumulated (core/analysis/corpus_index.h),
// resumable after Ctrl-C, split into shards for job arrays and merged. docs/corpus.md.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>

#include "app/cli/commands.h"
#include "core/analysis/corpus_index.h"
#include "core/analysis/weight_check.h"
#include "core/formats/model_io.h"
#include "core/tensor/error.h"

namespace atlas::cli {
namespace {

const char* kCorpusUsage =
    "usage: atlas corpus MODEL --file F --out DIR [--shard K/N] [--top K] [--max-tokens N]\n"
    "                    [--exclude-self]\n"
    "  Runs MODEL over every non-empty line of F (one document per line; a document's id is its\n"
    "  line number from 0) and writes to DIR: head statistics averaged over the documents\n"
    "  (heads.csv, heads/<family>.<statistic>.npy) and the K strongest attention links of every\n"
    "  self-attention map and head across the corpus (links.csv); manifest.json records the run.\n"
    "  Ctrl-C stops after saving the state; the same command resumes where it stopped.\n"
    "  --shard K/N      only the documents whose id % N == K (a job array runs K = 0 .. N-1;\n"
    "                   atlas corpus-merge joins the folders)\n"
    "  --top K          links kept per map and head (default 100, at most 10000)\n"
    "  --max-tokens N   skip documents longer than N tokens (default and cap: the model's\n"
    "                   max_positions); skipped documents are listed in manifest.json\n"
    "  --exclude-self   leave out the links of a query to its own position\n";

const char* kMergeUsage =
    "usage: atlas corpus-merge OUT_DIR SHARD_DIR... [--allow-missing]\n"
    "  Joins the folders of finished `atlas corpus --shard K/N` runs into OUT_DIR. All shards\n"
    "  merged equal one unsplit run, byte for byte. Shards of other models, files or settings,\n"
    "  a shard given twice, and unfinished shards are refused; missing shards too, unless\n"
    "  --allow-missing (the index then covers the shards given; merge the rest into it later).\n";

std::atomic<bool> g_interrupted{false};

// The first Ctrl-C asks the run to stop after saving; a second one kills at once (the state on
// disk is consistent at every moment).
void on_interrupt(int) {
  g_interrupted.store(true);
  ::signal(SIGINT, SIG_DFL);
}

std::string shard_name(const CorpusShard& s) {
  return std::to_string(s.index) + "/" + std::to_string(s.count);
}

void print_skips(const std::vector<CorpusSkip>& skips) {
  constexpr size_t kShown = 10;
  for (size_t i = 0; i < skips.size() && i < kShown; ++i)
    std::fprintf(stderr, "warning: document %lld skipped: %s\n", (long long)skips[i].document,
                 printable(skips[i].reason).c_str());
  if (skips.size() > kShown)
    std::fprintf(stderr, "warning: %zu more documents skipped (all are listed in manifest.json)\n",
                 skips.size() - kShown);
}

}  // namespace

int cmd_corpus(const std::vector<std::string>& args) {
  if (wants_help(args, kCorpusUsage)) return 0;
  Args a(args, {{"--file", "--out", "--shard", "--top", "--max-tokens"}, {"--exclude-self"}});
  if (a.positionals().size() != 1)
    throw AtlasError("corpus takes one MODEL (see atlas corpus --help)");
  CorpusRunOptions o;
  o.model_argument = a.positionals()[0];
  o.corpus_path = a.require("--file");
  o.out_dir = a.require("--out");
  if (o.out_dir.empty())
    throw AtlasError("--out is empty; give the folder to write the index into");
  if (auto s = a.get("--shard")) o.shard = parse_corpus_shard(*s, "--shard");
  o.settings.top = a.get_int("--top", 100, 1, 10000);
  o.settings.max_tokens = a.get_int("--max-tokens", 0, 1, INT32_MAX);
  o.settings.exclude_self = a.has("--exclude-self");
  const Model model = load_model(o.model_argument);
  for (const auto& w : model.warnings())
    std::fprintf(stderr, "warning: %s\n", printable(w).c_str());
  for (const auto& w : weight_warnings(model))
    std::fprintf(stderr, "warning: %s\n", printable(w).c_str());

  const bool tty = isatty(2);
  o.cancel = &g_interrupted;
  o.progress = [tty](int64_t done, int64_t total) {
    if (tty)
      std::fprintf(stderr, "\rcorpus: %lld / %lld documents", (long long)done, (long long)total);
  };
  g_interrupted.store(false);
  struct sigaction action = {};
  struct sigaction previous = {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, &previous);
  struct Restore {
    struct sigaction old;
    ~Restore() { ::sigaction(SIGINT, &old, nullptr); }
  } restore{previous};
  const CorpusRunResult r = run_corpus(model, o);
  if (tty) std::fprintf(stderr, "\n");

  print_skips(r.skipped_now);
  if (r.cancelled) {
    std::fprintf(stderr,
                 "atlas corpus: stopped after %lld of %lld documents; the state is saved in %s: "
                 "run the same command to resume\n",
                 (long long)r.done, (long long)r.total, printable(o.out_dir).c_str());
    return 130;  // as a shell reports a command ended by SIGINT
  }
  if (r.total > 0 && r.measured == 0)
    throw AtlasError("no document of " + o.corpus_path + " could be measured (" +
                     std::to_string(r.skipped) + " skipped; the reasons are in " + o.out_dir +
                     "/manifest.json)");
  std::printf(
      "%s%lld documents%s: %lld measured, %lld skipped%s\n", r.done_before > 0 ? "resumed; " : "",
      (long long)r.total, o.shard.count > 1 ? (" of shard " + shard_name(o.shard)).c_str() : "",
      (long long)r.measured, (long long)r.skipped,
      r.done_before > 0 ? (" (" + std::to_string(r.done_before) + " were done before)").c_str()
                        : "");
  std::printf("wrote %s: manifest.json, heads.csv, heads/*.npy, links.csv, documents.jsonl\n",
              printable(o.out_dir).c_str());
  return 0;
}

int cmd_corpus_merge(const std::vector<std::string>& args) {
  if (wants_help(args, kMergeUsage)) return 0;
  Args a(args, {{}, {"--allow-missing"}});
  if (a.positionals().size() < 2)
    throw AtlasError(
        "corpus-merge takes OUT_DIR and at least one SHARD_DIR (see atlas corpus-merge --help)");
  const std::vector<std::string> shards(a.positionals().begin() + 1, a.positionals().end());
  const CorpusMergeResult r = merge_corpus(a.positionals()[0], shards, a.has("--allow-missing"));
  if (!r.missing_shards.empty()) {
    std::string list;
    for (int64_t k : r.missing_shards) list += (list.empty() ? "" : ", ") + std::to_string(k);
    std::fprintf(stderr, "warning: the index lacks shards %s (--allow-missing)\n", list.c_str());
  }
  std::printf("merged %zu folders (%lld documents%s) into %s\n", shards.size(),
              (long long)r.documents, r.complete ? ", the whole corpus" : "",
              printable(a.positionals()[0]).c_str());
  return 0;
}

}  // namespace atlas::cli
