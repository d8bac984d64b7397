// `atlas`: the headless command line. Wiring only: parse the verb, call it, turn errors into
// one line on stderr and a non-zero exit code.
//   exit 0  success
//   exit 1  the input was refused or failed: AtlasError, a file-system or I/O error (named by
//           path), out of memory, output that did not reach standard output (a full disk,
//           /dev/full, `ulimit -f`: app/checked_writes.h); the message says what to change
//   exit 2  usage: no verb or an unknown verb
//   exit 3  an internal error (a bug: please report the message)
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "app/checked_writes.h"
#include "app/cli/commands.h"
#include "app/openmp_waits.h"
#include "core/tensor/allocation_policy.h"
#include "core/tensor/error.h"

namespace {

const char* kUsageHead =
    "atlas: inspect what transformer variants do (Attention Atlas)\n"
    "\n"
    "usage: atlas VERB [options]   (atlas VERB --help for details)\n"
    "\n"
    "verbs:\n";
const char* kUsageTail =
    "\n"
    "MODEL is a directory (config.json + model.safetensors, or a Hugging Face GPT-2 / BERT /\n"
    "DistilBERT directory), a .safetensors file, or preset:NAME.\n";

// The verbs and their line in `atlas --help`, which lists exactly this table (the CLI tests
// read the list from there to reach every verb).
struct Verb {
  const char* name;
  atlas::cli::Command fn;
  const char* summary;
};

const Verb kVerbs[] = {
    {"presets", atlas::cli::cmd_presets, "list the built-in presets"},
    {"init", atlas::cli::cmd_init, "write a preset's model (config + seeded weights) to a directory"},
    {"info", atlas::cli::cmd_info, "architecture, parameter count, memory and FLOP estimates"},
    {"run", atlas::cli::cmd_run, "run a model on text; --dump writes every traced array as .npy"},
    {"generate", atlas::cli::cmd_generate,
     "append tokens to a text with a decoder-only model (GPT-2), greedy or sampled"},
    {"bench", atlas::cli::cmd_bench, "time the forward pass and report GFLOP/s"},
    {"devices", atlas::cli::cmd_devices, "list Vulkan compute devices"},
    {"pattern", atlas::cli::cmd_pattern,
     "a sparse variant's attention pattern (stats or a zoomable tile), no model run"},
    {"performer-error", atlas::cli::cmd_performer_error,
     "Performer FAVOR+ error against exact softmax as a function of m"},
    {"demos", atlas::cli::cmd_demos, "trained demo models (demo:NAME) with their sample input"},
    {"train", atlas::cli::cmd_train, "train a small model on a generated task (copy, sort, parity, ...)"},
    {"scores", atlas::cli::cmd_scores, "every attention score function (seed 004) on the same queries and keys"},
    {"corpus", atlas::cli::cmd_corpus,
     "a model over a text file, one document per line: head statistics and the\n"
     "            strongest attention links, resumable, in shards"},
    {"corpus-merge", atlas::cli::cmd_corpus_merge, "join the shards of a corpus run into one index"},
    {"corpus-query", atlas::cli::cmd_corpus_query, "the strongest links and the heads of a corpus index"},
    {"heads", atlas::cli::cmd_heads,
     "head statistics: entropy, distance, sink, previous-token, duplicate, induction"},
    {"ablate", atlas::cli::cmd_ablate,
     "ablation sweep: every head or layer removed in turn, the change of the output"},
    {"dla", atlas::cli::cmd_dla,
     "direct logit attribution: a logit split into embeddings, heads, MLPs and biases"},
    {"compare", atlas::cli::cmd_compare,
     "two inputs or two models: per-head attention distances, difference heatmaps"},
    {"search", atlas::cli::cmd_search,
     "token search: the heads where matching queries attend most to matching keys"},
    {"patch", atlas::cli::cmd_patch, "activation and path patching: clean and corrupted input, every site in turn, the metric"},
    {"qk-decompose", atlas::cli::cmd_qk_decompose,
     "why a head attends from a query to a key: its score split into components"},
    {"attribute", atlas::cli::cmd_attribute,
     "attribution patching: every patch of atlas patch estimated from gradients at once"},
    {"ntm", atlas::cli::cmd_ntm, "Neural Turing Machine addressing step by step from hand-given controls"},
    {"sagan", atlas::cli::cmd_sagan, "Self-Attention GAN block on an image: where a location attends"},
    {"snail", atlas::cli::cmd_snail, "SNAIL: causal dilated convolutions + causal attention, receptive field"},
    {"gguf", atlas::cli::cmd_gguf, "a GGUF file (llama.cpp): metadata, tensor table, one tensor as .npy"},
#ifdef ATLAS_HAVE_UI
    {"export", atlas::cli::cmd_export, "render a view to SVG, PDF, PNG, or its data to .npy / .csv"},
#endif
};

void print_usage(FILE* to) {
  std::fputs(kUsageHead, to);
  for (const Verb& v : kVerbs) std::fprintf(to, "  %-9s %s\n", v.name, v.summary);
  std::fputs(kUsageTail, to);
}

// The reason of a file-system error in the words of core/formats/input_file.cpp, so a path
// fails the same way whichever code touched it first.
std::string fs_reason(const std::error_code& ec) {
  if (ec.category() == std::generic_category() || ec.category() == std::system_category()) {
    switch (ec.value()) {
      case ENOENT: return "no such file or folder";
      case ENOTDIR: return "a part of the path is not a folder";
      case EACCES: return "permission denied";
      case EPERM: return "operation not permitted";
      case ELOOP: return "too many levels of symbolic links (a symlink loop?)";
      case ENAMETOOLONG: return "the path is too long";
      case EISDIR: return "is a folder, not a file";
      case EEXIST: return "already exists and is not a folder";
      case ENOSPC: return "no space left on the device";
      case EROFS: return "the file system is read-only";
      case EDQUOT: return "disk quota exceeded";
      case EFBIG: return "the file is too large for the file-size limit (ulimit -f)";
      default: break;
    }
  }
  return ec.message();
}

// One line on stderr: the message with control bytes escaped (a NUL or newline from a user's
// file can neither cut nor split it) and very long paths shortened in the middle.
void print_error(const std::string& verb, const std::string& message) {
  const std::string line = "atlas " + verb + ": " + atlas::cli::printable(message, 2048) + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
}

// Runs the verb; `error_said` is set when its failure was already said on stderr.
int run_verb(const Verb& v, const std::vector<std::string>& args, bool& error_said) {
  const std::string verb = v.name;
  error_said = true;
  try {
    const int code = v.fn(args);
    error_said = false;
    return code;
  } catch (const atlas::AtlasError& e) {
    print_error(verb, e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    print_error(verb, "out of memory (try a shorter input or a smaller model)");
    return 1;
  } catch (const std::length_error&) {  // a container asked for more than it can ever hold
    print_error(verb, "out of memory: a size derived from the input is too large "
                      "(try a shorter input or a smaller model)");
    return 1;
  } catch (const std::filesystem::filesystem_error& e) {
    // A path the user gave (or one inside it) that the file system refused: name it.
    const std::string path = !e.path1().empty() ? e.path1().string() : e.path2().string();
    print_error(verb, (path.empty() ? std::string() : atlas::cli::printable(path, 300) + ": ") +
                          fs_reason(e.code()));
    return 1;
  } catch (const std::system_error& e) {  // I/O errors outside std::filesystem
    print_error(verb, fs_reason(e.code()) + " (" + e.what() + ")");
    return 1;
  } catch (const std::exception& e) {
    print_error(verb, std::string("internal error: ") + e.what());
    return 3;
  }
}

}  // namespace

int main(int argc, char** argv) {
  atlas::app::wait_passively_in_openmp(argv);
  atlas::app::check_every_write("atlas");
  atlas::keep_freed_memory_for_reuse();
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") ||
      !std::strcmp(argv[1], "help")) {
    print_usage(argc < 2 ? stderr : stdout);
    return atlas::app::finish_standard_output(argc < 2 ? 2 : 0, false, "atlas");
  }
  const std::string verb = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  for (const Verb& v : kVerbs) {
    if (verb != v.name) continue;
    bool error_said = false;
    const int code = run_verb(v, args, error_said);
    // Everything the verb printed must have reached stdout: a full disk or /dev/full is exit 1.
    return atlas::app::finish_standard_output(code, error_said, "atlas " + verb);
  }
  std::fprintf(stderr, "atlas: unknown verb \"%s\" (atlas --help lists them)\n",
               atlas::cli::printable(verb, 80).c_str());
  return 2;
}
