// Transformer-XL memory: a long text through the tiny-xl preset segment by segment
// (16-token segments, 16 memory rows per layer, nothing traced). Each length runs in a forked
// child so its peak RSS (getrusage ru_maxrss via wait4) is its own; peak memory should stay
// flat in the length apart from the [L, vocab] logits and [L, d] outputs the run returns.
// Usage: bench_xl [--lengths 1000,5000] [--preset tiny-xl]
// Prints a markdown table (docs/PERFORMANCE.md, "Transformer-XL memory").
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "core/model/model.h"
#include "core/model/params.h"
#include "core/model/presets.h"

using namespace atlas;

int main(int argc, char** argv) {
  std::vector<int64_t> lengths = {1000, 5000};
  std::string preset = "tiny-xl";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--lengths")) {
      lengths.clear();
      std::stringstream ss(argv[i + 1]);
      for (std::string t; std::getline(ss, t, ',');) lengths.push_back(std::stoll(t));
    } else if (!std::strcmp(argv[i], "--preset")) {
      preset = argv[i + 1];
    }
  }
  std::printf("| preset | tokens | segments | mem_len | time (s) | peak RSS (MiB) |\n");
  std::printf("|---|---|---|---|---|---|\n");
  for (int64_t L : lengths) {
    int fds[2];
    if (pipe(fds) != 0) return 1;
    const pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      const ModelConfig c = preset_config(preset);
      Model m(c, init_params(c, c.seed));
      std::vector<TokenInfo> toks;
      for (int64_t i = 0; i < L; ++i) toks.push_back({int32_t(97 + i % 26), "x"});
      RunOptions o;
      o.trace = TraceOptions::none();
      const auto t0 = std::chrono::steady_clock::now();
      const RunResult r = m.forward(toks, {}, o);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      char buf[256];
      const int n = std::snprintf(buf, sizeof buf, "%lld %lld %lld %.3f %zu",
                                  (long long)((L + c.xl()->segment_length - 1) / c.xl()->segment_length),
                                  (long long)c.xl()->mem_len, (long long)r.output.shape[0], s,
                                  r.output.data.size());
      if (write(fds[1], buf, size_t(n)) != n) _exit(1);
      _exit(0);
    }
    close(fds[1]);
    int status = 0;
    rusage ru{};
    wait4(pid, &status, 0, &ru);
    char buf[256] = {0};
    if (read(fds[0], buf, sizeof buf - 1) <= 0 || !WIFEXITED(status) || WEXITSTATUS(status)) {
      std::fprintf(stderr, "run of %lld tokens failed\n", (long long)L);
      return 1;
    }
    close(fds[0]);
    long long segs = 0, mem = 0, rows = 0;
    double secs = 0;
    size_t n = 0;
    std::sscanf(buf, "%lld %lld %lld %lf %zu", &segs, &mem, &rows, &secs, &n);
    std::printf("| %s | %lld | %lld | %lld | %.2f | %.1f |\n", preset.c_str(), (long long)L, segs,
                mem, secs, double(ru.ru_maxrss) / 1024.0);
  }
  return 0;
}
