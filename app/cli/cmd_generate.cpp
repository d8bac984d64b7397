// atlas generate: greedy or sampled decoding with a decoder-only model (GPT-2), then one
// traced forward over prompt + generated tokens so the attention of each generated token can
// be dumped and inspected (core/model/generate.h).
#include <cstdio>
#include <cstdlib>

#include "app/cli/commands.h"
#include "core/formats/dump.h"
#include "core/tensor/error.h"
#include "core/analysis/weight_check.h"
#include "core/model/generate.h"
#include "core/formats/model_io.h"

namespace atlas::cli {

namespace {

const char* kGenerateUsage =
    "usage: atlas generate MODEL --text S --tokens N [--greedy | --temperature T --seed S]\n"
    "                      [--top-k K] [--dump DIR] [--threads T]\n"
    "  Appends N tokens to S with a decoder-only model (e.g. a GPT-2 directory) and prints\n"
    "  the text. Greedy (argmax) unless --temperature is given: then each token is sampled\n"
    "  from softmax(logits / T) with the generator seeded by --seed (default 0).\n"
    "  --top-k K     print the K most likely next tokens after the last one\n"
    "  --dump DIR    dump the traced forward over prompt + generated tokens\n";

}  // namespace

int cmd_generate(const std::vector<std::string>& args) {
  if (wants_help(args, kGenerateUsage)) return 0;
  Args a(args, {{"--text", "--tokens", "--temperature", "--seed", "--top-k", "--dump", "--threads"},
                {"--greedy"}});
  // A folder --dump may not write is refused before the (possibly long) run.
  if (auto dir = a.get("--dump")) check_dump_destination(*dir);
  if (a.positionals().size() != 1) throw AtlasError("generate takes one MODEL (see atlas generate --help)");
  if (a.has("--greedy") && a.has("--temperature"))
    throw AtlasError("give --greedy or --temperature, not both");
  if (a.has("--seed") && !a.has("--temperature"))
    throw AtlasError("--seed applies to sampling; add --temperature T (greedy decoding is deterministic)");
  Model model = load_model(a.positionals()[0]);
  for (const auto& w : model.warnings()) std::fprintf(stderr, "warning: %s\n", printable(w).c_str());
  for (const auto& w : weight_warnings(model)) std::fprintf(stderr, "warning: %s\n", printable(w).c_str());

  GenerateOptions g;
  g.new_tokens = a.get_int("--tokens", 10, 1, model.config().max_positions);
  if (auto t = a.get("--temperature")) {
    char* end = nullptr;
    g.temperature = std::strtod(t->c_str(), &end);
    if (t->empty() || *end != '\0' || !(g.temperature > 0) || g.temperature > 1e6)
      throw AtlasError("--temperature must be a number in (0, 1e6], got \"" + printable(*t) + "\"");
    g.greedy = false;
  }
  g.seed = static_cast<uint64_t>(a.get_int("--seed", 0, 0, INT64_MAX));
  RunOptions options;
  options.threads = static_cast<int>(a.get_int("--threads", 0, 0, 1024));
  const int64_t top = a.get_int("--top-k", 0, 0, model.config().vocab_size);  // checked before the run
  GenerateResult r = generate(model, a.require("--text"), g, options);
  // NaN/Inf logits make every argmax and sample meaningless: say so next to the text.
  for (const auto& w : output_warnings(r.run)) std::fprintf(stderr, "warning: %s\n", w.c_str());

  std::printf("model: %s\n", model.config().name.c_str());
  std::printf("prompt tokens (%zu):", r.prompt.size());
  for (const auto& t : r.prompt) std::printf(" %s", printable(t.label).c_str());
  std::printf("\ngenerated tokens (%zu):", r.generated.size());
  for (const auto& t : r.generated) std::printf(" %s", printable(t.label).c_str());
  // The text as generated, every byte (a NUL must not end it early).
  std::printf("\ntext: ");
  std::fwrite(r.text.data(), 1, r.text.size(), stdout);
  std::printf("\n");
  if (const int64_t k = top; k > 0) {
    std::printf("next-token top-%lld:", static_cast<long long>(k));
    for (const Prediction& p : top_k(model, r.run.output, r.run.output.shape[0] - 1, k))
      std::printf(" %s %.4f", printable(p.label).c_str(), p.probability);
    std::printf("\n");
  }
  if (auto dir = a.get("--dump")) {
    write_dump(*dir, model, r.run);
    std::printf("dumped %zu arrays to %s\n", r.run.trace.arrays.size(), printable(*dir).c_str());
  }
  return 0;
}

}  // namespace atlas::cli
