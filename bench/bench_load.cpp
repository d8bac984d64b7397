// Load benchmark of a Hugging Face GPT-2 directory (issue 7): writes a synthetic checkpoint
// with the exact tensor names and shapes of gpt2 (124M parameters, F32, ~498 MB) to a
// temporary directory, then loads it in fresh child processes (the first run fills the page
// cache, the others are "warm") and reports wall time and peak resident memory (VmHWM, which
// counts the memory-mapped file pages) against the file size.
// Usage: bench_load [--runs N] [--keep DIR]   (figures in docs/PERFORMANCE.md)
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/formats/hf/hf_checkpoint.h"

using namespace atlas;
namespace fs = std::filesystem;

namespace {

int64_t status_kb(const char* key) {  // a "VmHWM:   1234 kB" line of /proc/self/status
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0) return std::atoll(line.c_str() + std::strlen(key));
  return -1;
}

void write_checkpoint(const fs::path& dir) {
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << R"({"model_type": "gpt2", "vocab_size": 50257,
    "n_embd": 768, "n_layer": 12, "n_head": 12, "n_positions": 1024, "n_ctx": 1024,
    "activation_function": "gelu_new", "layer_norm_epsilon": 1e-05})";
  std::map<std::string, std::vector<int64_t>> shapes = {{"wte.weight", {50257, 768}},
      {"wpe.weight", {1024, 768}}, {"ln_f.weight", {768}}, {"ln_f.bias", {768}}};
  for (int i = 0; i < 12; ++i) {
    const std::string h = "h." + std::to_string(i);
    shapes[h + ".ln_1.weight"] = shapes[h + ".ln_1.bias"] = {768};
    shapes[h + ".ln_2.weight"] = shapes[h + ".ln_2.bias"] = {768};
    shapes[h + ".attn.c_attn.weight"] = {768, 2304};
    shapes[h + ".attn.c_attn.bias"] = {2304};
    shapes[h + ".attn.c_proj.weight"] = {768, 768};
    shapes[h + ".attn.c_proj.bias"] = {768};
    shapes[h + ".mlp.c_fc.weight"] = {768, 3072};
    shapes[h + ".mlp.c_fc.bias"] = {3072};
    shapes[h + ".mlp.c_proj.weight"] = {3072, 768};
    shapes[h + ".mlp.c_proj.bias"] = {768};
    shapes[h + ".attn.bias"] = {1, 1, 1024, 1024};  // the mask buffer real files carry
  }
  nlohmann::json header = nlohmann::json::object();
  uint64_t offset = 0;
  for (const auto& [name, shape] : shapes) {
    uint64_t n = 1;
    for (int64_t s : shape) n *= uint64_t(s);
    header["transformer." + name] = {{"dtype", "F32"}, {"shape", shape},
                                     {"data_offsets", {offset, offset + 4 * n}}};
    offset += 4 * n;
  }
  std::string h = header.dump();
  while (h.size() % 8) h += ' ';
  std::ofstream out(dir / "model.safetensors", std::ios::binary);
  uint64_t len = h.size();
  out.write(reinterpret_cast<const char*>(&len), 8);
  out << h;
  std::vector<float> chunk(1 << 20);
  for (size_t i = 0; i < chunk.size(); ++i) chunk[i] = float(int(i % 201) - 100) / 2048.0f;
  for (uint64_t left = offset / 4; left > 0;) {
    const uint64_t n = std::min<uint64_t>(left, chunk.size());
    out.write(reinterpret_cast<const char*>(chunk.data()), std::streamsize(n * 4));
    left -= n;
  }
}

double cpu_seconds() {  // user + system time of this process
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// Prints "wall_seconds cpu_seconds baseline_kb peak_kb params". CPU time is reported too
// because on a shared machine the wall time mostly measures the other processes.
int child_load(const char* dir) {
  const int64_t base = status_kb("VmRSS:");
  const double cpu0 = cpu_seconds();
  auto t0 = std::chrono::steady_clock::now();
  Model m = load_hf_directory(dir, {.tokenizer = false});
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  int64_t n = 0;
  for (const auto& [name, t] : m.params()) n += t.numel();
  std::printf("%.4f %.4f %lld %lld %lld\n", s, cpu_seconds() - cpu0, (long long)base, (long long)status_kb("VmHWM:"),
              (long long)n);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && !std::strcmp(argv[1], "--child")) return child_load(argv[2]);
  int runs = 4;
  std::string keep;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--runs")) runs = std::max(2, std::atoi(argv[i + 1]));
    if (!std::strcmp(argv[i], "--keep")) keep = argv[i + 1];
  }
  const fs::path dir = keep.empty() ? fs::temp_directory_path() /
                                          ("atlas-bench-load-" + std::to_string(::getpid()))
                                    : fs::path(keep);
  if (!fs::exists(dir / "model.safetensors")) write_checkpoint(dir);
  const double file_mb = double(fs::file_size(dir / "model.safetensors")) / 1048576.0;
  std::printf("gpt2-shaped checkpoint: %.1f MB F32 (%s)\n", file_mb, dir.c_str());
  std::vector<double> warm, warm_cpu;
  for (int r = 0; r < runs; ++r) {
    const std::string cmd = fs::read_symlink("/proc/self/exe").string() + " --child '" +
                            dir.string() + "'";
    FILE* p = popen(cmd.c_str(), "r");
    double s = 0, cpu = 0;
    long long base = 0, peak = 0, n = 0;
    if (!p || std::fscanf(p, "%lf %lf %lld %lld %lld", &s, &cpu, &base, &peak, &n) != 5) {
      std::fprintf(stderr, "child load failed\n");
      return 1;
    }
    pclose(p);
    const double peak_mb = double(peak) / 1024.0, base_mb = double(base) / 1024.0;
    std::printf("run %d%s: %.3f s wall, %.3f s CPU, %lld parameters, peak RSS %.1f MB (%.2fx file; %.1f MB "
                "before loading, %.2fx file above it)\n",
                r, r == 0 ? " (cold-ish)" : "", s, cpu, n, peak_mb, peak_mb / file_mb, base_mb,
                (peak_mb - base_mb) / file_mb);
    if (r > 0) {
      warm.push_back(s);
      warm_cpu.push_back(cpu);
    }
  }
  std::sort(warm.begin(), warm.end());
  std::sort(warm_cpu.begin(), warm_cpu.end());
  std::printf("warm load median: %.3f s wall, %.3f s CPU\n", warm[warm.size() / 2],
              warm_cpu[warm_cpu.size() / 2]);
  if (keep.empty()) fs::remove_all(dir);
  return 0;
}
