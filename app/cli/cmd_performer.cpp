// atlas performer-error: how well Performer's FAVOR+ approximates exact softmax attention as a
// function of the number of random features m: the table of core/analysis/performer_study.h's
// study, which the app's Performer panel draws.
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "app/cli/commands.h"
#include "core/analysis/performer_study.h"
#include "core/formats/input_file.h"
#include "core/tensor/checked_math.h"
#include "core/tensor/error.h"

namespace atlas::cli {

// The random-feature matrices phi(Q), phi(K) of the largest request: 1 GiB in total.
constexpr int64_t kFeatureBudget = int64_t(1) << 30;

int cmd_performer_error(const std::vector<std::string>& args) {
  if (wants_help(args,
                 "usage: atlas performer-error [--length L] [--d D] [--features 16,64,...]\n"
                 "                             [--std S] [--seed N] [--causal]\n"
                 "  Error of Performer FAVOR+ (positive orthogonal random features) against exact\n"
                 "  softmax attention of the same Q, K (entries N(0, S^2); defaults L 256, D 64,\n"
                 "  S 0.5): mean absolute error over the L x L matrix and the largest row-wise total\n"
                 "  variation 0.5 sum_j |A_ij - B_ij|, one line per m.\n"))
    return 0;
  Args a(args, {{"--length", "--d", "--features", "--std", "--seed"}, {"--causal"}});
  if (!a.positionals().empty()) throw AtlasError("unexpected argument " + a.positionals()[0]);
  const int64_t L = a.get_int("--length", 256, 1, 4096), d = a.get_int("--d", 64, 1, 1024);
  const uint64_t seed = static_cast<uint64_t>(a.get_int("--seed", 0, 0, INT64_MAX));
  const std::string sd_text = a.get_or("--std", "0.5");
  char* end = nullptr;
  const double sd = std::strtod(sd_text.c_str(), &end);
  if (sd_text.empty() || *end != '\0' || !(sd > 0 && sd < 100))
    throw AtlasError("--std must be a number in (0, 100), got \"" + printable(sd_text) + "\"");
  std::vector<int64_t> ms;
  std::stringstream ss(a.get_or("--features", "16,32,64,128,256,512,1024,2048,4096"));
  for (std::string item; std::getline(ss, item, ',');) {
    const long long m = parse_int_list("--features", item, {"m"}, 1, 65536)[0];
    // phi(Q) and phi(K) are [L, m] float32 each: keep the pair within kFeatureBudget.
    const int64_t bytes = checked_mul(checked_mul(L, m, "--length", "--features m"), 8, "[L, m] cells", "bytes");
    if (bytes > kFeatureBudget)
      throw AtlasError("--features " + std::to_string(m) + " at --length " + std::to_string(L) +
                       " needs two [" + std::to_string(L) + ", " + std::to_string(m) + "] float32 feature matrices (" +
                       format_bytes(uint64_t(bytes)) + ", over " + format_bytes(uint64_t(kFeatureBudget)) +
                       "); use a smaller m or --length");
    ms.push_back(m);
  }
  if (ms.empty()) throw AtlasError("--features is empty: give a comma-separated list of m values");
  FavorStudySpec spec;
  spec.length = L;
  spec.d = d;
  spec.features = ms;
  spec.sd = sd;
  spec.seed = seed;
  spec.causal = a.has("--causal");
  const FavorStudy study = favor_error_study(spec);
  std::printf("# Performer FAVOR+ vs exact softmax: L %lld, d %lld, %s, Q/K entries N(0, %g^2)\n",
              (long long)L, (long long)d, spec.causal ? "causal" : "bidirectional", sd);
  std::printf("%8s  %14s  %12s\n", "m", "mean_abs_err", "max_row_tv");
  for (size_t i = 0; i < ms.size(); ++i)
    std::printf("%8lld  %14.3e  %12.4f\n", (long long)ms[i], study.errors[i].mean_abs, study.errors[i].max_tv);
  return 0;
}

}  // namespace atlas::cli
