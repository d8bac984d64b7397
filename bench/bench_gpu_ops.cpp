// Per-op timings of the CPU (Eigen) and Vulkan backends at 128, 512 and 2048 tokens, d 512,
// 8 heads. Vulkan time = (record `reps` copies of the op, then one download of the last
// result) / reps, so it includes the submission and the wait but not per-op waits; CPU time
// = the op itself. Not a test: numbers are printed, nothing is asserted.
//
//   bench_gpu_ops [--device NAME|INDEX] [--tokens 128,512,2048] [--reps N] [--ops SUBSTRING,...]
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

#include "core/backend/backend.h"
#include "core/model/model.h"
#include "core/model/params.h"
#include "core/model/presets.h"
#include "core/tensor/error.h"
#include "core/variants/performer/performer_attention.h"
#include "core/variants/relative_attention/relative_attention_op.h"
#include "core/variants/score_functions/score_attention.h"
#include "core/variants/sparse/sparse_attention.h"
#include "core/variants/transformer_xl/xl_attention_op.h"
#include "core/variants/universal/act_step.h"
#include "gpu/vulkan_backend.h"

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
  DTensor rel_k, rel_v;  // Shaw tables [2k+1, d_head], k = kShawK
  DTensor xl_k, xl_v, xl_rk, xl_u, xl_vb;  // Transformer-XL: L memory rows + L segment rows
  DTensor act_halting, act_logit;          // ACT: [L, 4] state after one step, [L, 1] logits
  DTensor score_w, score_w1, score_w2, score_v;  // general W_a, additive W1, W2, v_a (d_attn 64)
  DTensor performer_w;  // FAVOR+ features [heads, 256, d_head]
};

constexpr int64_t kShawK = 16;

Inputs upload_inputs(Backend& be, int64_t L, int64_t d, int heads) {
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
  in.rel_k = be.upload(random_tensor({2 * kShawK + 1, d / heads}, 13));
  in.rel_v = be.upload(random_tensor({2 * kShawK + 1, d / heads}, 14));
  in.xl_k = be.upload(random_tensor({2 * L, d}, 15));
  in.xl_v = be.upload(random_tensor({2 * L, d}, 16));
  in.xl_rk = be.upload(random_tensor({2 * L, d}, 17));
  in.xl_u = be.upload(random_tensor({heads, d / heads}, 18));
  in.xl_vb = be.upload(random_tensor({heads, d / heads}, 19));
  Tensor halting({L, 4});
  for (int64_t i = 0; i < L; ++i) halting.data[size_t(4 * i)] = 0.3f, halting.data[size_t(4 * i + 2)] = 1;
  in.act_halting = be.upload(halting);
  in.act_logit = be.upload(random_tensor({L, 1}, 20));
  const int64_t dh = d / heads;
  in.score_w = be.upload(random_tensor({heads, dh, dh}, 21));
  in.score_w1 = be.upload(random_tensor({heads, 64, dh}, 22));
  in.score_w2 = be.upload(random_tensor({heads, 64, dh}, 23));
  in.score_v = be.upload(random_tensor({heads, 64}, 24));
  in.performer_w = be.upload(random_tensor({heads, 256, dh}, 25));
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
  // Variant attention (the relative_attention op): Shaw k = 16, adaptive span (causal, z
  // from L/8 to L/2 over the heads, ramp 32), both with probabilities as the views ask.
  auto rel = [heads, L](bool shaw, bool span, bool probs) {
    std::vector<float> z(static_cast<size_t>(heads * L));
    for (int h = 0; h < heads; ++h)
      for (int64_t i = 0; i < L; ++i) z[size_t(h * L + i)] = float(L) * (1.0f + 3.0f * h / heads) / 8.0f;
    return [=](Backend& be, const Inputs& in) {
      RelativeAttentionArgs a;
      a.attn.heads = heads;
      a.attn.scale = 0.125f;
      a.attn.mask.causal = true;
      a.attn.want_probs = probs;
      if (shaw) {
        a.rel_k = in.rel_k;
        a.rel_v = in.rel_v;
        a.max_distance = kShawK;
      }
      if (span) {
        a.span_z = z;
        a.span_ramp = 32;
        a.span_max = L;
      }
      return relative_attention(be, in.q, in.k, in.v, a).out;
    };
  };
  // Sparse Transformer strided pattern (stride sqrt(L), heads alternate the two factors),
  // causal, as the tiny-sparse-strided preset builds it.
  auto sparse = [heads, L] {
    SparseConfig s;
    s.pattern = SparsePattern::Strided;
    AttentionMask m;
    m.causal = true;
    auto pats = std::make_shared<std::vector<CsrPattern>>(layer_patterns(s, L, 0, heads, m));
    return [heads, pats](Backend& be, const Inputs& in) {
      return sparse_attention(be, in.q, in.k, in.v, heads, 0.125f, *pats, false).out;
    };
  };
  // Transformer-XL (the xl_attention module op): a segment of L queries over L memory rows +
  // itself, with the probabilities and the four terms as the XL view asks.
  auto xl = [heads](bool terms) {
    return [heads, terms](Backend& be, const Inputs& in) {
      XlAttentionArgs a;
      a.heads = heads;
      a.scale = 0.125f;
      a.want_probs = a.want_terms = terms;
      return xl_attention(be, in.q, in.xl_k, in.xl_v, in.xl_rk, in.xl_u, in.xl_vb, a).out;
    };
  };
  // Seed 004's score functions (the score_attention module op), causal, with probabilities.
  auto score = [heads](ScoreFunction f) {
    return [heads, f](Backend& be, const Inputs& in) {
      ScoreAttentionArgs a;
      a.attn.heads = heads;
      a.attn.mask.causal = true;
      a.attn.want_probs = true;
      a.function = f;
      if (f == ScoreFunction::General) a.w = in.score_w;
      if (f == ScoreFunction::Additive) a.w1 = in.score_w1, a.w2 = in.score_w2, a.v_a = in.score_v;
      return score_attention(be, in.q, in.k, in.v, a).out;
    };
  };
  // Performer FAVOR+ (the performer_attention module op), 256 features per head: bidirectional
  // (linear-time path) and causal (per-row path).
  auto performer = [heads](bool causal) {
    return [heads, causal](Backend& be, const Inputs& in) {
      PerformerArgs a;
      a.heads = heads;
      a.causal = causal;
      return performer_attention(be, in.q, in.k, in.v, in.performer_w, a).out;
    };
  };
  return {
      {"linear d->d", [](Backend& be, const Inputs& in) { return be.linear(in.x, in.w, in.b); }},
      {"linear d->4d",
       [](Backend& be, const Inputs& in) { return be.linear(in.x, in.w_ff, in.b_ff); }},
      {"add", [](Backend& be, const Inputs& in) { return be.add(in.x, in.x2); }},
      {"scale", [](Backend& be, const Inputs& in) { return be.scale(in.x, 0.5f); }},
      {"layer_norm",
       [](Backend& be, const Inputs& in) { return be.layer_norm(in.x, in.gamma, in.beta, 1e-5f); }},
      {"row_normalize",
       [](Backend& be, const Inputs& in) { return be.row_normalize(in.x, 1e-6f); }},
      {"gelu (erf)",
       [](Backend& be, const Inputs& in) { return be.activation(in.x, Activation::GeluErf); }},
      {"embedding",
       [ids](Backend& be, const Inputs& in) { return be.embedding(in.table, ids, 22.6f); }},
      {"attention", attn(false, false)},
      {"attention causal", attn(false, true)},
      {"attention +probs", attn(true, false)},
      {"shaw attention", rel(true, false, false)},
      {"span attention", rel(false, true, false)},
      {"shaw+span +probs", rel(true, true, true)},
      {"sparse attention", sparse()},
      {"xl attention", xl(false)},
      {"xl attention +terms", xl(true)},
      {"score general attention", score(ScoreFunction::General)},
      {"score additive attention", score(ScoreFunction::Additive)},
      {"performer attention", performer(false)},
      {"performer causal attention", performer(true)},
      {"act step",
       [](Backend& be, const Inputs& in) {
         return act_step(be, {in.act_halting, in.x, in.x2}, in.act_logit, in.q, {}).next.y;
       }},
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

// Whole forward of a small preset (d 64, 4 heads, 2 layers) with the default trace
// (probabilities and masks, as the explorer asks): median of 3 runs after a warm-up that
// uploads the weights; the submissions of one run on Vulkan.
void bench_forward(Backend& cpu, Backend& gpu, const std::vector<int64_t>& tokens) {
  std::printf("\nwhole forward (default trace)\n%-18s %6s %12s %12s %9s %8s\n", "preset",
              "tokens", "cpu ms", "vulkan ms", "vk/cpu", "submits");
  for (const char* preset : {"tiny-decoder", "tiny-shaw", "tiny-span", "tiny-xl", "tiny-gtrxl",
                             "tiny-ut-act", "tiny-score-additive", "tiny-performer"}) {
    ModelConfig c = preset_config(preset);
    c.max_positions = std::max<int64_t>(c.max_positions, 4096);
    const Model model(c, init_params(c, 1));
    for (int64_t L : tokens) {
      std::string text(static_cast<size_t>(L), 'a');
      for (int64_t i = 0; i < L; ++i) text[size_t(i)] = char('a' + (i * 7) % 26);
      auto time_on = [&](Backend& be, uint64_t* submits) {
        RunOptions o;
        o.backend = &be;
        model.run(text, "", o);  // warm-up: weights, pipelines
        std::vector<double> t;
        for (int r = 0; r < 3; ++r) {
          const uint64_t s0 = be.submission_count();
          const double t0 = now_ms();
          model.run(text, "", o);
          t.push_back(now_ms() - t0);
          if (submits) *submits = be.submission_count() - s0;
        }
        std::sort(t.begin(), t.end());
        return t[1];
      };
      uint64_t subs = 0;
      const double tc = time_on(cpu, nullptr), tg = time_on(gpu, &subs);
      std::printf("%-18s %6lld %12.3f %12.3f %9.2f %8llu\n", preset, static_cast<long long>(L),
                  tc, tg, tg / tc, static_cast<unsigned long long>(subs));
      std::fflush(stdout);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  VulkanOptions opt;
  std::vector<int64_t> tokens = {128, 512, 2048};
  int reps = 5;
  std::vector<std::string> only;  // run the ops whose name contains one of these ("forward":
                                  // the whole-forward section)
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--device" && i + 1 < argc) {
      opt.device = argv[++i];
    } else if (a == "--tokens" && i + 1 < argc) {
      tokens.clear();
      std::stringstream ss(argv[++i]);
      for (std::string tok; std::getline(ss, tok, ',');) tokens.push_back(std::stoll(tok));
    } else if (a == "--ops" && i + 1 < argc) {
      std::stringstream ss(argv[++i]);
      for (std::string tok; std::getline(ss, tok, ',');) only.push_back(tok);
    } else if (a == "--reps" && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: %s [--device NAME|INDEX] [--tokens 128,512,2048] [--reps N] "
                   "[--ops SUBSTRING,...]\n",
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
      const Inputs ci = upload_inputs(*cpu, L, d, heads), gi = upload_inputs(*gpu, L, d, heads);
      for (const OpDef& op : ops(L, heads)) {
        if (!only.empty() && std::none_of(only.begin(), only.end(), [&](const std::string& o) {
              return op.name.find(o) != std::string::npos;
            }))
          continue;
        // Long attention runs are slow on a CPU-emulated device: fewer repetitions there.
        const bool attention_like = op.name.find("attention") != std::string::npos ||
                                    op.name.find("shaw") != std::string::npos;
        const int r = (attention_like && L >= 2048) ? 1 : reps;
        const int rounds = (attention_like && L >= 2048) ? 1 : 3;  // keeps a run to minutes
        const double tc = time_op(*cpu, ci, op.run, r, rounds);
        const uint64_t s0 = gpu->submission_count();
        const double tg = time_op(*gpu, gi, op.run, r, rounds);
        const double subs = double(gpu->submission_count() - s0) / (rounds + 1);  // per run
        std::printf("%-18s %6lld %12.3f %12.3f %9.2f %8.0f\n", op.name.c_str(),
                    static_cast<long long>(L), tc, tg, tg / tc, subs);
        std::fflush(stdout);
      }
    }
    if (only.empty() || std::find(only.begin(), only.end(), "forward") != only.end())
      bench_forward(*cpu, *gpu, tokens);
    const auto fb = gpu->fallbacks();
    for (const auto& f : fb) std::printf("fallback: %s\n", f.c_str());
  } catch (const AtlasError& e) {
    std::fprintf(stderr, "bench_gpu_ops: %s\n", e.what());
    return 1;
  }
  return 0;
}
