#pragma once
// The verbs of `atlas`. Each returns the process exit code and throws AtlasError on failure.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/cli/args.h"
#include "core/backend/backend.h"
#include "core/config/config.h"
#include "core/model/trace.h"

namespace atlas::cli {

int cmd_presets(const std::vector<std::string>& args);
int cmd_init(const std::vector<std::string>& args);
int cmd_info(const std::vector<std::string>& args);
int cmd_run(const std::vector<std::string>& args);
int cmd_bench(const std::vector<std::string>& args);
int cmd_devices(const std::vector<std::string>& args);
int cmd_pattern(const std::vector<std::string>& args);  // sparse patterns
int cmd_performer_error(const std::vector<std::string>& args);  // FAVOR+ error vs m
int cmd_demos(const std::vector<std::string>& args);  // trained demo models (cmd_models.cpp)
int cmd_train(const std::vector<std::string>& args);  // training (cmd_train.cpp)
int cmd_scores(const std::vector<std::string>& args);  // score functions side by side
int cmd_ntm(const std::vector<std::string>& args);  // NTM addressing, manual controls
int cmd_sagan(const std::vector<std::string>& args);  // SAGAN block on an image
int cmd_snail(const std::vector<std::string>& args);  // SNAIL conv + attention
int cmd_generate(const std::vector<std::string>& args);  // GPT-2 decoding
int cmd_gguf(const std::vector<std::string>& args);  // GGUF files: metadata, tensors, dumps
int cmd_corpus(const std::vector<std::string>& args);        // corpus mode (cmd_corpus.cpp)
int cmd_corpus_merge(const std::vector<std::string>& args);  // shards of a corpus run joined
int cmd_corpus_query(const std::vector<std::string>& args);  // links and heads of a corpus index
int cmd_heads(const std::vector<std::string>& args);   // head statistics
int cmd_ablate(const std::vector<std::string>& args);  // ablation sweeps
int cmd_compare(const std::vector<std::string>& args);  // two runs' attention compared
int cmd_search(const std::vector<std::string>& args);   // token search over heads
int cmd_dla(const std::vector<std::string>& args);      // direct logit attribution
int cmd_patch(const std::vector<std::string>& args);    // activation patching
int cmd_qk_decompose(const std::vector<std::string>& args);  // a head's score split into components
int cmd_attribute(const std::vector<std::string>& args);  // attribution patching (AtP)
#ifdef ATLAS_HAVE_UI
int cmd_export(const std::vector<std::string>& args);
#endif

// `--backend cpu|vulkan|auto` and `--device NAME|INDEX`. Returns nullptr for the CPU
// reference backend (the model's own). Prints one line to stderr when auto falls back.
std::unique_ptr<Backend> choose_backend(const std::string& backend, const std::string& device);

// `--maps auto|stored|on-demand` (TraceOptions::maps); auto when absent. Warns on stderr when
// on-demand cannot apply to `config`'s attention.
MapStorage map_storage_arg(const std::optional<std::string>& value, const ModelConfig& config);

// True when `--help`/`-h` is among the args; prints `usage` to stdout.
bool wants_help(const std::vector<std::string>& args, const char* usage);

}  // namespace atlas::cli
