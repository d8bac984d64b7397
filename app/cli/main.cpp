// `atlas`: the headless command line. Wiring only: parse the verb, call it, turn errors into
// one line on stderr and a non-zero exit code.
//   exit 0  success
//   exit 1  the input was refused or failed: AtlasError, a file-system or I/O error (named by
//           path), out of memory; the message says what to change
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

#include "app/cli/commands.h"
#include "app/openmp_waits.h"
#include "core/tensor/allocation_policy.h"
#include "core/tensor/error.h"

namespace {

const char* kCommandsUsage =
    "atlas: inspect what transformer variants do (Attention Atlas)\n"
    "\n"
    "usage: atlas VERB [options]   (atlas VERB --help for details)\n"
    "\n"
    "verbs:\n"
    "  presets   list the built-in presets\n"
    "  init      write a preset's model (config + seeded weights) to a directory\n"
    "  info      architecture, parameter count, memory and FLOP estimates\n"
    "  run       run a model on text; --dump writes every traced array as .npy\n"
    "  generate  append tokens to a text with a decoder-only model (GPT-2), greedy or sampled\n"
    "  bench     time the forward pass and report GFLOP/s\n"
    "  devices   list Vulkan compute devices\n"
    "  pattern   a sparse variant's attention pattern (stats or a zoomable tile), no model run\n"
    "  performer-error  Performer FAVOR+ error against exact softmax as a function of m\n"
    "  demos     trained demo models (demo:NAME) with their sample input\n"
    "  train     train a small model on a generated task (copy, sort, parity, ...)\n"
    "  scores    every attention score function (seed 004) on the same queries and keys\n"
    "  corpus    a model over a text file, one document per line: head statistics and the\n"
    "            strongest attention links, resumable, in shards (corpus-merge, corpus-query)\n"
    "  heads     head statistics: entropy, distance, sink, previous-token, duplicate, induction\n"
    "  ablate    ablation sweep: every head or layer removed in turn, the change of the output\n"
    "  compare   two inputs or two models: per-head attention distances, difference heatmaps\n"
    "  search    token search: the heads where matching queries attend most to matching keys\n"
    "  ntm       Neural Turing Machine addressing step by step from hand-given controls\n"
    "  sagan     Self-Attention GAN block on an image: where a location attends\n"
    "  snail     SNAIL: causal dilated convolutions + causal attention, receptive field\n"
    "  gguf      a GGUF file (llama.cpp): metadata, tensor table, one tensor as .npy\n"
#ifdef ATLAS_HAVE_UI
    "  export    render a view to SVG, PDF, PNG, or its data to .npy / .csv\n"
#endif
    "\n"
    "MODEL is a directory (config.json + model.safetensors, or a Hugging Face GPT-2 / BERT /\n"
    "DistilBERT directory), a .safetensors file, or preset:NAME.\n";

struct Verb {
  const char* name;
  atlas::cli::Command fn;
};

const Verb kVerbs[] = {
    {"presets", atlas::cli::cmd_presets}, {"init", atlas::cli::cmd_init},
    {"info", atlas::cli::cmd_info},       {"run", atlas::cli::cmd_run},
    {"bench", atlas::cli::cmd_bench},     {"devices", atlas::cli::cmd_devices},
    {"pattern", atlas::cli::cmd_pattern},       {"generate", atlas::cli::cmd_generate},
    {"performer-error", atlas::cli::cmd_performer_error},
    {"train", atlas::cli::cmd_train},
    {"demos", atlas::cli::cmd_demos},
    {"scores", atlas::cli::cmd_scores},
    {"corpus", atlas::cli::cmd_corpus},
    {"corpus-merge", atlas::cli::cmd_corpus_merge},
    {"corpus-query", atlas::cli::cmd_corpus_query},
    {"heads", atlas::cli::cmd_heads},
    {"ablate", atlas::cli::cmd_ablate},
    {"compare", atlas::cli::cmd_compare},
    {"search", atlas::cli::cmd_search},
    {"ntm", atlas::cli::cmd_ntm},
    {"sagan", atlas::cli::cmd_sagan},
    {"snail", atlas::cli::cmd_snail},
    {"gguf", atlas::cli::cmd_gguf},
#ifdef ATLAS_HAVE_UI
    {"export", atlas::cli::cmd_export},
#endif
};

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

}  // namespace

int main(int argc, char** argv) {
  atlas::app::wait_passively_in_openmp(argv);
  atlas::keep_freed_memory_for_reuse();
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") ||
      !std::strcmp(argv[1], "help")) {
    std::fputs(kCommandsUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string verb = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  for (const Verb& v : kVerbs) {
    if (verb != v.name) continue;
    try {
      return v.fn(args);
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
  std::fprintf(stderr, "atlas: unknown verb \"%s\" (atlas --help lists them)\n",
               atlas::cli::printable(verb, 80).c_str());
  return 2;
}
