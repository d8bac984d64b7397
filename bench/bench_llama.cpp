// A 1B-parameter Llama (Llama 3.2 1B's shapes: 16 layers, d 2048, 32 query heads on 8
// key/value heads, SwiGLU 8192, vocab 128256, tied; random weights written here) opened from a
// Hugging Face folder of BF16 safetensors and from a Q8_0 GGUF file, and run on 128 tokens
// with every attention map traced. Baselines measured in the same run: the machine's float32
// GEMM rate on the model's own product shapes, and from it the GEMM-bound forward time
// (forward FLOPs / rate); the forward is reported as a ratio to it.
// Opening is also timed the way a user meets it: a fresh process (this binary re-run with
// --open-child) from fork to the model being ready, five times per file, warm page cache.
// Usage: bench_llama [--tokens N] [--keep DIR]   (figures in docs/PERFORMANCE.md)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include <unistd.h>

#include "core/backend/backend.h"
#include "core/formats/gguf_model.h"
#include "core/formats/hf/hf_checkpoint.h"
#include "core/model/estimate.h"
#include "core/model/model.h"

using namespace atlas;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int64_t kVocab = 128256, kD = 2048, kLayers = 16, kHeads = 32, kKv = 8, kFf = 8192;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct Shape2 {
  std::string name;
  int64_t rows, cols;  // cols = 0: a vector of `rows`
};

std::vector<Shape2> hf_tensors() {
  std::vector<Shape2> t = {{"model.embed_tokens.weight", kVocab, kD}, {"model.norm.weight", kD, 0}};
  const int64_t dh = kD / kHeads;
  for (int i = 0; i < kLayers; ++i) {
    const std::string h = "model.layers." + std::to_string(i) + ".";
    t.push_back({h + "input_layernorm.weight", kD, 0});
    t.push_back({h + "post_attention_layernorm.weight", kD, 0});
    t.push_back({h + "self_attn.q_proj.weight", kD, kD});
    t.push_back({h + "self_attn.k_proj.weight", kKv * dh, kD});
    t.push_back({h + "self_attn.v_proj.weight", kKv * dh, kD});
    t.push_back({h + "self_attn.o_proj.weight", kD, kD});
    t.push_back({h + "mlp.gate_proj.weight", kFf, kD});
    t.push_back({h + "mlp.up_proj.weight", kFf, kD});
    t.push_back({h + "mlp.down_proj.weight", kD, kFf});
  }
  return t;
}

// Small values (|x| < 0.05) from a cheap generator; norms near one.
struct Values {
  uint32_t state = 12345;
  float next(bool norm) {
    state = state * 1664525u + 1013904223u;
    const float u = float(state >> 8) / float(1 << 24) - 0.5f;
    return norm ? 1.0f + 0.1f * u : 0.1f * u;
  }
};

void write_hf(const fs::path& dir) {
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << nlohmann::json{
      {"model_type", "llama"}, {"vocab_size", kVocab}, {"hidden_size", kD},
      {"num_hidden_layers", kLayers}, {"num_attention_heads", kHeads},
      {"num_key_value_heads", kKv}, {"intermediate_size", kFf},
      {"max_position_embeddings", 131072}, {"rms_norm_eps", 1e-5}, {"rope_theta", 500000.0},
      {"tie_word_embeddings", true}, {"hidden_act", "silu"},
      {"rope_scaling", {{"rope_type", "llama3"}, {"factor", 32.0}, {"low_freq_factor", 1.0},
                        {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}}}}
                                             .dump();
  nlohmann::json header = nlohmann::json::object();
  uint64_t offset = 0;
  const auto tensors = hf_tensors();
  for (const Shape2& t : tensors) {
    const uint64_t n = uint64_t(t.rows) * uint64_t(t.cols ? t.cols : 1);
    header[t.name] = {{"dtype", "BF16"},
                      {"shape", t.cols ? std::vector<int64_t>{t.rows, t.cols} : std::vector<int64_t>{t.rows}},
                      {"data_offsets", {offset, offset + 2 * n}}};
    offset += 2 * n;
  }
  std::string h = header.dump();
  while (h.size() % 8) h += ' ';
  std::ofstream out(dir / "model.safetensors", std::ios::binary);
  const uint64_t hn = h.size();
  out.write(reinterpret_cast<const char*>(&hn), 8);
  out << h;
  Values v;
  std::vector<uint16_t> buf;
  for (const Shape2& t : tensors) {
    buf.resize(size_t(t.rows) * size_t(t.cols ? t.cols : 1));
    for (uint16_t& b : buf) {
      const float f = v.next(t.cols == 0);
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      b = uint16_t(bits >> 16);
    }
    out.write(reinterpret_cast<const char*>(buf.data()), std::streamsize(buf.size() * 2));
  }
}

// GGUF v3, llama.cpp's names; matrices Q8_0 (f16 scale + 32 int8), vectors F32.
void write_gguf(const fs::path& path) {
  std::vector<uint8_t> head;
  auto put = [&](uint64_t x, int n) {
    for (int i = 0; i < n; ++i) head.push_back(uint8_t(x >> (8 * i)));
  };
  auto put_str = [&](const std::string& s) {
    put(s.size(), 8);
    head.insert(head.end(), s.begin(), s.end());
  };
  struct Info {
    std::string name;
    int64_t rows, cols;
  };
  std::vector<Info> infos = {{"token_embd.weight", kVocab, kD}, {"output_norm.weight", kD, 0}};
  const int64_t dh = kD / kHeads;
  for (int i = 0; i < kLayers; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    for (auto [n, r, c] : std::vector<std::tuple<std::string, int64_t, int64_t>>{
             {"attn_norm.weight", kD, 0}, {"ffn_norm.weight", kD, 0}, {"attn_q.weight", kD, kD},
             {"attn_k.weight", kKv * dh, kD}, {"attn_v.weight", kKv * dh, kD},
             {"attn_output.weight", kD, kD}, {"ffn_gate.weight", kFf, kD},
             {"ffn_up.weight", kFf, kD}, {"ffn_down.weight", kD, kFf}})
      infos.push_back({b + n, r, c});
  }
  head.insert(head.end(), {'G', 'G', 'U', 'F'});
  put(3, 4);
  put(infos.size(), 8);
  const std::vector<std::pair<std::string, uint32_t>> ints = {
      {"llama.embedding_length", kD}, {"llama.block_count", kLayers},
      {"llama.attention.head_count", kHeads}, {"llama.attention.head_count_kv", kKv},
      {"llama.feed_forward_length", kFf}, {"llama.context_length", 131072}};
  put(ints.size() + 2, 8);
  put_str("general.architecture");
  put(8, 4);
  put_str("llama");
  for (const auto& [k, x] : ints) {
    put_str(k);
    put(4, 4);
    put(x, 4);
  }
  put_str("llama.rope.freq_base");
  put(6, 4);
  const float theta = 500000.0f;
  uint32_t tb;
  std::memcpy(&tb, &theta, 4);
  put(tb, 4);
  uint64_t offset = 0;
  auto bytes_of = [](const Info& t) {
    return t.cols ? uint64_t(t.rows) * uint64_t(t.cols) / 32 * 34 : uint64_t(t.rows) * 4;
  };
  for (const Info& t : infos) {
    put_str(t.name);
    put(t.cols ? 2 : 1, 4);
    put(uint64_t(t.cols ? t.cols : t.rows), 8);
    if (t.cols) put(uint64_t(t.rows), 8);
    put(t.cols ? 8 : 0, 4);  // Q8_0 or F32
    put(offset, 8);
    offset = (offset + bytes_of(t) + 31) / 32 * 32;
  }
  while (head.size() % 32) head.push_back(0);
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(head.data()), std::streamsize(head.size()));
  Values v;
  std::vector<uint8_t> buf;
  for (const Info& t : infos) {
    buf.assign(bytes_of(t), 0);
    if (t.cols) {
      for (size_t b = 0; b < buf.size(); b += 34) {
        buf[b] = 0x1f;  // f16 scale 0x0e1f = 0.000374
        buf[b + 1] = 0x0e;
        for (int i = 0; i < 32; ++i) buf[b + 2 + size_t(i)] = uint8_t(int8_t(v.next(false) * 2540));
      }
    } else {
      for (size_t i = 0; i < buf.size(); i += 4) {
        const float f = v.next(true);
        std::memcpy(&buf[i], &f, 4);
      }
    }
    out.write(reinterpret_cast<const char*>(buf.data()), std::streamsize(buf.size()));
    const uint64_t pad = (32 - buf.size() % 32) % 32;
    for (uint64_t i = 0; i < pad; ++i) out.put(0);
  }
}

void warm(const fs::path& file) {  // the page cache, as for a model opened before
  std::ifstream in(file, std::ios::binary);
  std::vector<char> buf(1 << 24);
  while (in.read(buf.data(), std::streamsize(buf.size())) || in.gcount() > 0) {
  }
}

// float32 GEMM rate on the model's products at this length (q/o, k/v, gate/up, down).
double gemm_gflops(int64_t tokens) {
  auto be = make_cpu_backend();
  double flops = 0, secs = 0;
  for (auto [out, in] : std::vector<std::pair<int64_t, int64_t>>{{kD, kD}, {kKv * 64, kD}, {kFf, kD}, {kD, kFf}}) {
    Tensor x({tokens, in}), w({out, in});
    for (size_t i = 0; i < x.data.size(); ++i) x.data[i] = float(i % 7) * 0.01f;
    for (size_t i = 0; i < w.data.size(); ++i) w.data[i] = float(i % 5) * 0.01f;
    const DTensor dx = be->upload(x), dw = be->upload(w);
    be->linear(dx, dw, {});  // warm-up
    const auto t0 = Clock::now();
    for (int r = 0; r < 3; ++r) be->linear(dx, dw, {});
    secs += seconds_since(t0);
    flops += 3 * 2.0 * double(tokens) * double(in) * double(out);
  }
  return flops / secs / 1e9;
}

struct Result {
  const char* what;
  double open_s, forward_s, flops;
};

Result run(const Model& model, int64_t tokens, const char* what, double open_s) {
  std::vector<TokenInfo> ids;
  for (int64_t i = 0; i < tokens; ++i) ids.push_back({int32_t((i * 7919) % kVocab), "t"});
  model.forward(ids, {}, RunOptions{});  // warm-up (uploads, first-touch)
  double best = 1e30;
  for (int r = 0; r < 2; ++r) {
    const auto t0 = Clock::now();
    const RunResult res = model.forward(ids, {}, RunOptions{});
    best = std::min(best, seconds_since(t0));
  }
  return {what, open_s, best, estimate_cost(model.config(), tokens).flops};
}

Model open_model(const fs::path& path) {
  if (path.extension() == ".gguf") {
    GgufLoadOptions o;
    o.tokenizer = false;  // the bench file has no tokenizer metadata
    return load_gguf_model(path.string(), o);
  }
  HfLoadOptions o;
  o.tokenizer = false;  // the bench folder has no tokenizer files
  return load_hf_directory(path.string(), o);
}

// Seconds from fork to the child's "opened" line, for each of `runs` fresh processes.
std::vector<double> open_in_fresh_processes(const fs::path& path, int runs) {
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  std::vector<double> secs;
  for (int r = 0; r < runs; ++r) {
    const auto t0 = Clock::now();
    FILE* p = popen((self + " --open-child '" + path.string() + "'").c_str(), "r");
    char line[64] = {};
    const bool ok = p && std::fgets(line, sizeof line, p) && !std::strncmp(line, "opened", 6);
    const double s = seconds_since(t0);
    if (p) pclose(p);
    if (!ok) {
      std::fprintf(stderr, "bench_llama: the child process did not open %s\n", path.c_str());
      std::exit(1);
    }
    secs.push_back(s);
  }
  std::sort(secs.begin(), secs.end());
  return secs;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t tokens = 128;
  std::string keep;
  if (argc == 3 && !std::strcmp(argv[1], "--open-child")) {
    const Model m = open_model(argv[2]);
    std::printf("opened %lld\n", (long long)m.config().n_layers);
    std::fflush(stdout);
    return 0;
  }
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--tokens") && i + 1 < argc) tokens = std::atoll(argv[++i]);
    else if (!std::strcmp(argv[i], "--keep") && i + 1 < argc) keep = argv[++i];
    else {
      std::fprintf(stderr, "usage: bench_llama [--tokens N] [--keep DIR]\n");
      return 2;
    }
  }
  const fs::path dir = keep.empty() ? fs::temp_directory_path() / ("atlas-bench-llama-" + std::to_string(::getpid()))
                                    : fs::path(keep);
  fs::create_directories(dir);
  const fs::path hf = dir / "llama-1b-bf16", gguf = dir / "llama-1b-q8_0.gguf";
  if (!fs::exists(hf / "model.safetensors")) write_hf(hf);
  if (!fs::exists(gguf)) write_gguf(gguf);
  std::printf("files: %s (%.2f GB BF16), %s (%.2f GB Q8_0)\n", hf.c_str(),
              double(fs::file_size(hf / "model.safetensors")) / 1e9, gguf.c_str(),
              double(fs::file_size(gguf)) / 1e9);
  // Fresh processes first, then this process's own opens: a process that has just run OpenMP work keeps its threads spinning for a
  // while, which would slow the single-threaded parts of a load measured after it.
  for (const fs::path& path : {hf, gguf}) {
    warm(path.extension() == ".gguf" ? path : path / "model.safetensors");
    const std::vector<double> s = open_in_fresh_processes(path, 5);
    std::printf("open in a fresh process, %s: median %.2f s (%.2f-%.2f s over %zu runs)\n",
                path.filename().c_str(), s[s.size() / 2], s.front(), s.back(), s.size());
  }
  std::vector<Result> results;
  {
    warm(hf / "model.safetensors");
    const auto t0 = Clock::now();
    const Model m = open_model(hf);
    const double open_s = seconds_since(t0);
    results.push_back(run(m, tokens, "HF folder, BF16 safetensors", open_s));
  }
  {
    warm(gguf);
    const auto t0 = Clock::now();
    const Model m = open_model(gguf);
    const double open_s = seconds_since(t0);
    results.push_back(run(m, tokens, "GGUF, Q8_0", open_s));
  }
  const double rate = gemm_gflops(tokens);
  std::printf("same-run float32 GEMM rate at %lld rows: %.1f GFLOP/s\n", (long long)tokens, rate);
  for (const Result& r : results) {
    const double bound = r.flops / (rate * 1e9);
    std::printf("%-30s open %6.2f s   forward (%lld tokens, every map traced) %6.3f s = %.2fx the GEMM-bound %.3f s\n",
                r.what, r.open_s, (long long)tokens, r.forward_s, r.forward_s / bound, bound);
  }
  if (keep.empty()) fs::remove_all(dir);
  return 0;
}
