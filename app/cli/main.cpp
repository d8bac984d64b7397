// `atlas`: the headless command line. Wiring only: parse the verb, call it, turn errors into
// one line on stderr and a non-zero exit code.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "app/cli/commands.h"
#include "core/tensor/error.h"

namespace {

const char* kUsage =
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
    "  ntm       Neural Turing Machine addressing step by step from hand-given controls\n"
    "  sagan     Self-Attention GAN block on an image: where a location attends\n"
    "  snail     SNAIL: causal dilated convolutions + causal attention, receptive field\n"
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
    {"ntm", atlas::cli::cmd_ntm},
    {"sagan", atlas::cli::cmd_sagan},
    {"snail", atlas::cli::cmd_snail},
#ifdef ATLAS_HAVE_UI
    {"export", atlas::cli::cmd_export},
#endif
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") ||
      !std::strcmp(argv[1], "help")) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string verb = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  for (const Verb& v : kVerbs) {
    if (verb != v.name) continue;
    try {
      return v.fn(args);
    } catch (const atlas::AtlasError& e) {
      std::fprintf(stderr, "atlas %s: %s\n", verb.c_str(), e.what());
      return 1;
    } catch (const std::bad_alloc&) {
      std::fprintf(stderr, "atlas %s: out of memory (try a shorter input or a smaller model)\n",
                   verb.c_str());
      return 1;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "atlas %s: internal error: %s\n", verb.c_str(), e.what());
      return 3;
    }
  }
  std::fprintf(stderr, "atlas: unknown verb \"%s\" (atlas --help lists them)\n", verb.c_str());
  return 2;
}
