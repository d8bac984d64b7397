// Per-op timings of the CPU (Eigen) and Vulkan backends at 128, 512 and 2048 tokens, d 512,
// 8 heads. Vulkan time = (record `reps` copies of the op, then one download of the last
// result) / reps, so it includes the submission and the wait but not per-op waits; CPU time
// = the op itself. Not a test: numbers are printed, nothing is asserted.
//
//   bench_gpu_ops [--device NAME|INDEX] [--tokens 128,512,2048] [--reps N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "backend.h"
#include "error.h"
#include "vulkan_backend.h"

using namespace atlas;

namespace {

Tensor random_tensor(Shape shape, uint32_t seed) {
  Tensor t(shape);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float& v : t.data) v = dist(gen);
  return t;
}

double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

struct Inputs {
  DTensor x, x2, w, b, w_ff, b_ff, gamma, beta, table, q, k, v;
};

Inputs upload_inputs(Backend& be, int64_t L, int64_t d) {
  Inputs in;
  in.x = be.upload(random_tensor({L, d}, 1));
  in.x2 = be.upload(random_tensor({L, d}, 2));
  in.w = be.upload(random_tensor({d, d}, 3));
  in.b = be.upload(random_tensor({d}, 4));
  in.w_ff = be.upload(random_tensor({4 * d, d}, 5));
  in.b_ff = be.upload(random_tensor({4 * d}, 6));
  in.gamma = be.upload(random_tensor({d}, 7));
  in.beta = be.upload(random_tensor({d}, 8));
  in.table = be.upload(random_tensor({8000, d}, 9));
  in.q = be.upload(random_tensor({L, d}, 10));
  in.k = be.upload(random_tensor({L, d}, 11));
  in.v = be.upload(random_tensor({L, d}, 12));
  return in;
}

using OpFn = std::function<DTensor(Backend&, const Inputs&)>;

struct OpDef {
  std::string name;
  OpFn run;
};

std::vector<OpDef> ops(int64_t L, int heads) {
  std::vector<int32_t> ids(static_cast<size_t>(L));
  for (int64_t i = 0; i < L; ++i) ids[i] = static_cast<int32_t>((i * 7919) % 8000);
  auto attn = [heads](bool probs, bool causal) {
    return [heads, probs, causal](Backend& be, const Inputs& in) {
      AttentionArgs a;
      a.heads = heads;
      a.scale = 0.125f;
      a.mask.causal = causal;
      a.want_probs = probs;
      return be.attention(in.q, in.k, in.v, a).out;
    };
  };
  return {
      {"linear d->d", [](Backend& be, const Inputs& in) { return be.linear(in.x, in.w, in.b); }},
      {"linear d->4d", [](Backend& be, const Inputs& in) { return be.linear(in.x, in.w_ff, in.b_ff); }},
      {"add", [](Backend& be, const Inputs& in) { return be.add(in.x, in.x2); }},
      {"scale", [](Backend& be, const Inputs& in) { return be.scale(in.x, 0.5f); }},
      {"layer_norm", [](Backend& be, const Inputs& in) { return be.layer_norm(in.x, in.gamma, in.beta, 1e-5f); }},
      {"row_normalize", [](Backend& be, const Inputs& in) { return be.row_normalize(in.x, 1e-6f); }},
      {"gelu (erf)", [](Backend& be, const Inputs& in) { return be.activation(in.x, Activation::GeluErf); }},
      {"embedding", [ids](Backend& be, const Inputs& in) { return be.embedding(in.table, ids, 22.6f); }},
      {"attention", attn(false, false)},
      {"attention causal", attn(false, true)},
      {"attention +probs", attn(true, false)},
  };
}

// Median over `rounds` of the per-op time of `reps` recorded ops and one download.
double time_op(Backend& be, const Inputs& in, const OpFn& fn, int reps, int rounds) {
  be.download(fn(be, in));  // warm-up: pipelines, pooled buffers
  std::vector<double> t;
  for (int r = 0; r < rounds; ++r) {
    const double t0 = now_ms();
    DTensor last;
    for (int i = 0; i < reps; ++i) last = fn(be, in);
    be.download(last);
    t.push_back((now_ms() - t0) / reps);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  VulkanOptions opt;
  std::vector<int64_t> tokens = {128, 512, 2048};
  int reps = 5;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--device" && i + 1 < argc) {
      opt.device = argv[++i];
    } else if (a == "--tokens" && i + 1 < argc) {
      tokens.clear();
      std::stringstream ss(argv[++i]);
      for (std::string tok; std::getline(ss, tok, ',');) tokens.push_back(std::stoll(tok));
    } else if (a == "--reps" && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: %s [--device NAME|INDEX] [--tokens 128,512,2048] [--reps N]\n",
                   argv[0]);
      return 2;
    }
  }
  const int64_t d = 512;
  const int heads = 8;
  try {
    std::unique_ptr<Backend> cpu = make_cpu_backend();
    std::unique_ptr<Backend> gpu = make_vulkan_backend(opt);
    std::printf("cpu: %s\nvulkan: %s\nd %lld, %d heads, %d reps per measurement, median of 3\n\n",
                cpu->name().c_str(), gpu->name().c_str(), static_cast<long long>(d), heads, reps);
    std::printf("%-18s %6s %12s %12s %9s %8s\n", "op", "tokens", "cpu ms", "vulkan ms",
                "vk/cpu", "submits");
    for (int64_t L : tokens) {
      const Inputs ci = upload_inputs(*cpu, L, d), gi = upload_inputs(*gpu, L, d);
      for (const OpDef& op : ops(L, heads)) {
        // Long attention runs are slow on a CPU-emulated device: fewer repetitions there.
        const int r = (op.name.rfind("attention", 0) == 0 && L >= 2048) ? 1 : reps;
        const double tc = time_op(*cpu, ci, op.run, r, 3);
        const uint64_t s0 = gpu->submission_count();
        const double tg = time_op(*gpu, gi, op.run, r, 3);
        const double subs = double(gpu->submission_count() - s0) / 4;  // per warm-up + round
        std::printf("%-18s %6lld %12.3f %12.3f %9.2f %8.0f\n", op.name.c_str(),
                    static_cast<long long>(L), tc, tg, tg / tc, subs);
        std::fflush(stdout);
      }
    }
    const auto fb = gpu->fallbacks();
    for (const auto& f : fb) std::printf("fallback: %s\n", f.c_str());
  } catch (const AtlasError& e) {
    std::fprintf(stderr, "bench_gpu_ops: %s\n", e.what());
    return 1;
  }
  return 0;
}
