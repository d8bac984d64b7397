// GPT-2-small forward with every attention map traced, against PyTorch running the same
// architecture in the same bench run (<= 0.5x of PyTorch's time at 128 and 1024
// tokens). PyTorch is Debian's python3-torch (bench/torch_gpt2.py), whose generic libblas.so.3
// must resolve to OpenBLAS (apt-get install libopenblas0-pthread; the script prints which BLAS
// it loaded: the reference BLAS is 30x slower); it is run with OPENBLAS_CORETYPE and
// OPENBLAS_L2_SIZE unset, so it gets its best kernels on this CPU.
//   bench_gpt2_torch GPT2_DIR [--python /usr/bin/python3] [--lengths 128,1024] [--repeats 5]
// GPT2_DIR: a Hugging Face GPT-2-small folder (bench_load --keep DIR writes one as DIR/f32).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "bench/bench_timing.h"
#include "core/formats/model_io.h"
#include "core/model/model.h"
#include "core/tensor/allocation_policy.h"

using namespace atlas;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_gpt2_torch GPT2_DIR [--python /usr/bin/python3]\n");
    return 2;
  }
  std::string python = "/usr/bin/python3";  // Debian's, where python3-torch is installed
  std::vector<int> lengths = {128, 1024};
  int repeats = 5;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--python")) python = argv[i + 1];
    if (!std::strcmp(argv[i], "--repeats")) repeats = std::max(1, std::atoi(argv[i + 1]));
    if (!std::strcmp(argv[i], "--lengths")) {
      lengths.clear();
      for (const char* p = argv[i + 1]; *p;) {
        char* end = nullptr;
        const long n = std::strtol(p, &end, 10);
        if (end == p) break;
        if (n > 0 && n <= 1024) lengths.push_back(int(n));  // GPT-2 has 1024 positions
        p = *end == ',' ? end + 1 : end;
      }
    }
  }
  std::string length_args;
  for (int n : lengths) length_args += " " + std::to_string(n);

  // PyTorch first, in its own process, so neither run shares the cores with the other.
  std::map<int, double> torch_ms;
  const std::string cmd = "env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE " + python + " " +
                          ATLAS_SOURCE_DIR "/bench/torch_gpt2.py" + length_args;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char line[512];
    while (std::fgets(line, sizeof line, p)) {
      int tokens = 0;
      double ms = 0;
      if (std::sscanf(line, "{\"tokens\": %d, \"median_ms\": %lf", &tokens, &ms) == 2)
        torch_ms[tokens] = ms;
      std::printf("torch: %s", line);
    }
    pclose(p);
  }
  if (torch_ms.empty()) std::printf("PyTorch baseline not available (apt-get install python3-torch)\n");

  keep_freed_memory_for_reuse();  // as the app and the CLI run
  const Model model = load_model(argv[1]);
  std::printf("| tokens | Attention Atlas, every map traced (ms) | PyTorch, maps kept (ms) | ratio |\n");
  std::printf("| --- | --- | --- | --- |\n");
  for (int n : lengths) {
    std::vector<TokenInfo> ids;
    for (int i = 0; i < n; ++i) ids.push_back({int32_t((i * 7919) % 50257), "t"});
    RunOptions o;  // default trace: every attention map, masks, positions
    const double ours = bench::median_ms(repeats, [&] { model.forward(ids, {}, o); });
    if (torch_ms.count(n))
      std::printf("| %d | %.1f | %.1f | %.2f |\n", n, ours, torch_ms[n], ours / torch_ms[n]);
    else
      std::printf("| %d | %.1f | - | - |\n", n, ours);
  }
  return 0;
}
