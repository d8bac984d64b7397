// Long inputs: forward time and peak memory of full attention against the sparse
// patterns at L = 1k, 4k, 16k (d 256, 4 heads, 2 layers, decoder-only, nothing traced).
// Each case runs in a forked child so its peak RSS (getrusage ru_maxrss via wait4) is its own.
// Usage: bench_long [--lengths 1024,4096,16384] [--cases full,strided,fixed,local1d,lsh,performer]
// Prints a markdown table (the one in docs/PERFORMANCE.md, "Long inputs").
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/model/model.h"
#include "core/model/params.h"

using namespace atlas;

namespace {

ModelConfig config_for(const std::string& kind, int64_t length) {
  ModelConfig c;
  c.name = "bench-long-" + kind;
  c.architecture = Architecture::Decoder;
  c.d_model = 256;
  c.n_heads = 4;
  c.d_ff = 1024;
  c.n_layers = 2;
  c.max_positions = length;
  c.norm_position = NormPosition::Pre;
  if (kind == "strided") {
    // fixed stride: near-linear cost (auto = sqrt(L) grows as L^1.5)
    c.attention_kind = SparseConfig{
        .pattern = SparsePattern::Strided, .stride = 128, .combine = SparseCombine::PerHead};
  } else if (kind == "fixed") {
    c.attention_kind = SparseConfig{.pattern = SparsePattern::Fixed,
                                    .block = 128,
                                    .summary = 8,
                                    .combine = SparseCombine::Union};
  } else if (kind == "local1d") {
    c.attention_kind = SparseConfig{.pattern = SparsePattern::Local1D, .block_length = 256};
  } else if (kind == "lsh") {
    // trax defaults: chunk 128, one round, 2 L / 128 buckets
    c.attention_kind = LshConfig{.n_rounds = 1, .chunk_length = 128};
  } else if (kind == "performer") {
    c.attention_kind = PerformerConfig{.features = 256};  // m = 256 (reference default)
  } else if (kind != "full") {
    std::fprintf(stderr, "unknown case %s\n", kind.c_str());
    std::exit(2);
  }
  return c;
}

// Child: build the model, run the forward pass, write the best time in ms to `fd`.
void child(const std::string& kind, int64_t length, int fd) {
  ModelConfig c = config_for(kind, length);
  Model model(c, init_params(c, 1));
  std::vector<TokenInfo> tokens(static_cast<size_t>(length));
  for (int64_t i = 0; i < length; ++i) tokens[size_t(i)].id = int32_t((i * 7919) % 256);
  RunOptions o;
  o.trace = TraceOptions::none();
  const int repeats = length <= 4096 ? 3 : 1;
  double best = 1e300;
  for (int r = 0; r < repeats; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    RunResult res = model.forward(tokens, {}, o);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, ms);
    if (res.output.numel() == 0) std::exit(3);
  }
  if (write(fd, &best, sizeof best) != sizeof best) std::exit(4);
  std::exit(0);
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(item);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> lengths = {"1024", "4096", "16384"};
  std::vector<std::string> cases = {"full", "strided", "fixed", "local1d", "lsh", "performer"};
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--lengths")) lengths = split(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--cases")) cases = split(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: bench_long [--lengths 1024,4096,16384] [--cases full,...]\n");
      return 2;
    }
  }
  std::map<std::pair<std::string, int64_t>, std::pair<double, double>> results;  // ms, MB
  std::printf("| attention | L | time (ms) | peak RSS (MB) |\n| --- | --- | --- | --- |\n");
  std::fflush(stdout);
  for (const auto& kind : cases)
    for (const auto& ls : lengths) {
      const int64_t L = std::stoll(ls);
      int fds[2];
      if (pipe(fds) != 0) return 1;
      pid_t pid = fork();
      if (pid == 0) {
        close(fds[0]);
        child(kind, L, fds[1]);
      }
      close(fds[1]);
      double ms = -1;
      const bool got = read(fds[0], &ms, sizeof ms) == sizeof ms;
      close(fds[0]);
      int status = 0;
      struct rusage ru {};
      wait4(pid, &status, 0, &ru);
      const double mb = double(ru.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
      if (!got || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::printf("| %s | %lld | failed | %.0f |\n", kind.c_str(), (long long)L, mb);
        continue;
      }
      results[{kind, L}] = {ms, mb};
      std::printf("| %s | %lld | %.1f | %.0f |\n", kind.c_str(), (long long)L, ms, mb);
      std::fflush(stdout);
    }
  std::printf("\n| attention | time 16k / 4k | peak RSS 16k / 4k |\n| --- | --- | --- |\n");
  for (const auto& kind : cases) {
    auto a = results.find({kind, 4096}), b = results.find({kind, 16384});
    if (a == results.end() || b == results.end()) continue;
    std::printf("| %s | %.1fx | %.1fx |\n", kind.c_str(), b->second.first / a->second.first,
                b->second.second / a->second.second);
  }
  return 0;
}
