// atlas bench: median forward time (tracing on) after a warm-up, and achieved GFLOP/s.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "core/tensor/error.h"
#include "core/model/estimate.h"
#include "core/analysis/weight_check.h"
#include "core/formats/model_io.h"

namespace atlas::cli {

int cmd_bench(const std::vector<std::string>& args) {
  if (wants_help(args,
                 "usage: atlas bench MODEL --length N [--repeats R] [--threads T] [--json]\n"
                 "                   [--backend cpu|vulkan|auto] [--device D]\n"
                 "  Times the forward pass with attention tracing on, after one warm-up run,\n"
                 "  and prints the median in ms and the achieved GFLOP/s.\n"))
    return 0;
  Args a(args, {{"--length", "--repeats", "--threads", "--backend", "--device"}, {"--json"}});
  if (a.positionals().size() != 1) throw AtlasError("bench takes one MODEL");
  Model model = load_model(a.positionals()[0]);
  for (const auto& w : weight_warnings(model)) std::fprintf(stderr, "warning: %s\n", printable(w).c_str());
  const ModelConfig& c = model.config();
  const int64_t length = a.get_int("--length", 128, 1, c.max_positions);
  const int repeats = static_cast<int>(a.get_int("--repeats", 5, 1, 10000));

  RunOptions options;
  options.threads = static_cast<int>(a.get_int("--threads", 0, 0, 1024));
  std::unique_ptr<Backend> backend = choose_backend(a.get_or("--backend", "cpu"), a.get_or("--device", ""));
  options.backend = backend.get();

  // Deterministic synthetic tokens: every id the tokenizer knows, cycled.
  const int64_t vocab = model.tokenizer().vocab_size();
  std::vector<TokenInfo> tokens(static_cast<size_t>(length));
  for (int64_t i = 0; i < length; ++i)
    tokens[static_cast<size_t>(i)] = {static_cast<int32_t>((i * 7 + 32) % vocab), ""};
  std::vector<TokenInfo> target;
  if (c.architecture == Architecture::EncoderDecoder) target = tokens;

  model.forward(tokens, target, options);  // warm-up: uploads weights, touches memory
  std::vector<double> ms;
  for (int r = 0; r < repeats; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    model.forward(tokens, target, options);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  const double median = ms[ms.size() / 2];
  const double gflops = estimate_cost(c, length).flops / (median * 1e6);
  if (a.has("--json")) {
    nlohmann::json j = {{"model", c.name}, {"length", length}, {"repeats", repeats},
                        {"median_ms", median}, {"gflops", gflops},
                        {"backend", backend ? backend->name() : "cpu (Eigen)"}};
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else
    std::printf("%s at %lld tokens: median %.2f ms over %d runs, %.1f GFLOP/s\n", c.name.c_str(),
                static_cast<long long>(length), median, repeats, gflops);
  return 0;
}

}  // namespace atlas::cli
