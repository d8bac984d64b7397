// Incremental forward of a causal model (core/model/prefix_cache.h): the cost of one
// keystroke at the end of a long text with the prefix cache, against a full forward of the same
// text measured in the same run (the baseline), with the default trace (every attention map,
// masks, positions). Model: a GPT-2-small-shaped HF folder (bench_load --keep writes one) or any
// MODEL spec; text: words, one token each under GPT-2's BPE.
//   bench_incremental MODEL [--tokens N ...]   (figures in docs/PERFORMANCE.md)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/bench_timing.h"
#include "core/formats/model_io.h"
#include "core/model/model.h"
#include "core/model/prefix_cache.h"
#include "core/tensor/allocation_policy.h"

using namespace atlas;

namespace {

std::string text_of_tokens(const Model& model, int tokens) {
  const char* words[] = {" the", " quick", " brown", " fox", " jumps", " over", " a", " lazy", " dog"};
  std::string s = "The";
  for (int i = 0; static_cast<int>(model.tokenizer().encode(s).size()) < tokens; ++i) s += words[i % 9];
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_incremental MODEL [--tokens N ...]\n");
    return 2;
  }
  // As the app and the CLI run; ATLAS_BENCH_DEFAULT_MALLOC=1 measures glibc's defaults.
  if (!std::getenv("ATLAS_BENCH_DEFAULT_MALLOC")) keep_freed_memory_for_reuse();
  const Model model = load_model(argv[1]);
  std::vector<int> lengths;
  for (int i = 2; i + 1 < argc; i += 2)
    if (!std::strcmp(argv[i], "--tokens")) lengths.push_back(std::atoi(argv[i + 1]));
  if (lengths.empty()) lengths = {64, 512, 1000};
  std::printf("| tokens | full forward (ms) | keystroke with the prefix cache (ms) | ratio | tokens reused |\n");
  std::printf("| --- | --- | --- | --- | --- |\n");
  for (int n : lengths) {
    const std::string text = text_of_tokens(model, n);
    RunOptions full;
    const double full_ms = bench::median_ms(3, [&] { model.run(text, "", full); });
    std::vector<double> inc_ms;
    PrefixCache cache;
    RunOptions inc;
    inc.prefix_cache = &cache;
    model.run_shared(text, "", inc);
    int64_t reused = 0;
    for (int r = 0; r < 6; ++r) {  // type "s", then delete it, like bench_ui
      const std::string edited = r % 2 == 0 ? text + "s" : text;
      const auto t0 = std::chrono::steady_clock::now();
      model.run_shared(edited, "", inc);  // as the app: the cache shares the result
      inc_ms.push_back(bench::ms_since(t0));
      reused = cache.reused_tokens();
    }
    const double keystroke = bench::median(inc_ms);
    std::printf("| %d | %.1f | %.1f | %.3f | %lld |\n", n, full_ms, keystroke, keystroke / full_ms, (long long)reused);
  }
  return 0;
}
