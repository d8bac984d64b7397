// atlas scores: every alignment score function of seed 004 on the SAME queries and keys of one
// attention head, side by side (core/analysis/score_compare.h does the work).
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "app/cli/commands.h"
#include "core/formats/dump.h"
#include "core/tensor/error.h"
#include "core/formats/model_io.h"
#include "core/analysis/score_compare.h"
#include "core/analysis/weight_check.h"

namespace atlas::cli {

namespace {

const char* kScoresUsage =
    "usage: atlas scores MODEL --text S [--target S] [--attn NAME | --layer N] [--head H]\n"
    "                    [--strength B] [--seed N] [--dump DIR]\n"
    "  Computes every score function (scaled_dot, dot, general, additive, cosine, location)\n"
    "  on the same projected queries and keys of one head and prints the probabilities.\n"
    "  Parametrised functions use the model's weights when it is configured with them, else\n"
    "  seeded weights (the output says which).\n"
    "  --attn NAME   attention array, e.g. decoder.layer1.cross_attn (default: the first)\n"
    "  --layer N     the first attention array of layer N (default 0)\n"
    "  --head H      head (default 0)\n"
    "  --strength B  cosine key strength beta (default: the model's score.strength)\n"
    "  --dump DIR    one array per function: scores.<fn>.probs and scores.<fn>.scores [Lq, Lk]\n"
    "  Recurrent seq2seq models: queries are the decoder states s_t, keys the encoder states\n"
    "  h_i (global, no window); dot, scaled_dot and cosine need equal sizes.\n";

void print_matrix(const Mat& a, const std::vector<TokenInfo>& rows) {
  for (int64_t i = 0; i < a.rows(); ++i) {
    std::printf("    %-10.10s", i < int64_t(rows.size()) ? printable(rows[size_t(i)].label).c_str() : "");
    for (int64_t j = 0; j < a.cols(); ++j) std::printf(" %.3f", a(i, j));
    std::printf("\n");
  }
}

}  // namespace

int cmd_scores(const std::vector<std::string>& args) {
  if (wants_help(args, kScoresUsage)) return 0;
  Args a(args, {{"--text", "--target", "--attn", "--layer", "--head", "--strength", "--seed", "--dump"}, {}});
  // A folder --dump may not write is refused before the (possibly long) run.
  if (auto dir = a.get("--dump")) check_dump_destination(*dir);
  if (a.positionals().size() != 1) throw AtlasError("scores takes one MODEL (see atlas scores --help)");
  LoadOptions load;
  if (a.has("--seed")) load.seed = static_cast<uint64_t>(a.get_int("--seed", 0, 0, INT64_MAX));
  Model model = load_model(a.positionals()[0], load);
  for (const auto& w : model.warnings()) std::fprintf(stderr, "warning: %s\n", printable(w).c_str());
  for (const auto& w : weight_warnings(model)) std::fprintf(stderr, "warning: %s\n", printable(w).c_str());
  const ModelConfig& c = model.config();

  float strength = 0.0f;  // the model's
  if (auto v = a.get("--strength")) {
    char* end = nullptr;
    strength = std::strtof(v->c_str(), &end);
    if (v->empty() || *end != '\0' || !(strength > 0.0f) || !std::isfinite(strength))
      throw AtlasError("--strength must be a positive number, got \"" + printable(*v) + "\"");
  }
  const int64_t head = a.get_int("--head", 0, 0, c.rnn_seq2seq() ? 0 : c.n_heads - 1);
  // Checked against the run's attention layers by compare_score_functions, which names them.
  const int64_t layer = a.has("--layer") ? a.get_index("--layer")->value : 0;
  RunResult run = model.run(a.require("--text"), a.get_or("--target", ""), score_comparison_options(model));
  for (const auto& w : output_warnings(run)) std::fprintf(stderr, "warning: %s\n", w.c_str());
  ScoreComparison cmp;
  try {
    cmp = compare_score_functions(model, run.trace, a.get_or("--attn", ""), layer, head, strength);
  } catch (const AtlasError& e) {
    throw AtlasError((a.has("--attn") ? "--attn: " : a.has("--layer") ? "--layer: " : "") + std::string(e.what()));
  }

  if (c.rnn_seq2seq())
    std::printf("model: %s (recurrent: queries = decoder states s_t [%lld], keys = encoder states "
                "h_i [%lld]; global softmax, no window)\n",
                c.name.c_str(), (long long)cmp.dq, (long long)cmp.dk);
  else
    std::printf("model: %s, %s head %lld (queries [%lld, %lld], keys [%lld, %lld])\n", c.name.c_str(),
                cmp.attention.c_str(), (long long)cmp.head, (long long)cmp.lq, (long long)cmp.dq,
                (long long)cmp.lk, (long long)cmp.dk);
  const bool small = cmp.lq <= 12 && cmp.lk <= 12;
  for (const auto& e : cmp.entries) {
    const char* fn = score_function_name(e.function);
    if (!e.applicable) {
      std::printf("\n%s: not applicable: %s\n", fn, e.note.c_str());
      continue;
    }
    std::printf("\n%s%s (%s)\n", fn, e.models_own ? " [the model's own]" : "", e.note.c_str());
    if (small) {
      print_matrix(e.probs, cmp.row_tokens);
      continue;
    }
    std::printf("    argmax key per query:");
    for (int64_t i = 0; i < e.probs.rows() && i < 32; ++i) {
      Eigen::Index j = 0;
      e.probs.row(i).maxCoeff(&j);
      std::printf(" %lld", (long long)j);
    }
    std::printf(e.probs.rows() > 32 ? " ...\n" : "\n");
  }
  if (auto dir = a.get("--dump")) {
    RunResult dumped;
    dumped.trace.source_tokens = run.trace.source_tokens;
    dumped.trace.target_tokens = run.trace.target_tokens;
    add_score_comparison(dumped.trace, cmp);
    write_dump(*dir, model, dumped);
    std::printf("\ndumped %zu arrays to %s\n", dumped.trace.arrays.size(), dir->c_str());
  }
  return 0;
}

}  // namespace atlas::cli
