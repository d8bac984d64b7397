// atlas presets | init | info
#include <map>
#include <cstdio>

#include "app/cli/commands.h"
#include "core/formats/input_file.h"
#include "core/formats/model_header.h"
#include "core/formats/packed_weights.h"
#include "core/model/memory_budget.h"
#include "core/model/demos.h"
#include "core/tensor/error.h"
#include "core/model/estimate.h"
#include "core/formats/model_io.h"
#include "core/model/presets.h"
#include "core/backend/variant_ops.h"

namespace atlas::cli {

int cmd_presets(const std::vector<std::string>& args) {
  if (wants_help(args, "usage: atlas presets\n  One line per preset: name, tab, description.\n"))
    return 0;
  Args parsed(args, {});
  if (!parsed.positionals().empty()) throw AtlasError("presets takes no arguments");
  for (const auto& p : list_presets()) std::printf("%s\t%s\n", p.name.c_str(), p.description.c_str());
  return 0;
}

int cmd_demos(const std::vector<std::string>& args) {
  if (wants_help(args, "usage: atlas demos\n  Trained demo models (open as demo:NAME): name, tab, "
                       "description; then the sample input and the command that trained it.\n"))
    return 0;
  Args parsed(args, {});
  if (!parsed.positionals().empty()) throw AtlasError("demos takes no arguments");
  for (const DemoInfo& d : list_demos())
    std::printf("demo:%s\t%s\n  sample: %s\n  trained by: %s\n", d.name.c_str(),
                d.description.c_str(), d.sample.c_str(), d.command.c_str());
  return 0;
}

int cmd_init(const std::vector<std::string>& args) {
  if (wants_help(args,
                 "usage: atlas init --preset NAME [--seed N] --out DIR [--force]\n"
                 "  Writes DIR/config.json and DIR/model.safetensors with seeded weights.\n"
                 "  An existing model in DIR is replaced only with --force, as a whole: the\n"
                 "  new model is written beside it and swapped in, so a failed write keeps\n"
                 "  the old one. A folder holding other files is never overwritten.\n"))
    return 0;
  Args a(args, {{"--preset", "--seed", "--out"}, {"--force"}});
  if (!a.positionals().empty()) throw AtlasError("unexpected argument " + a.positionals()[0]);
  LoadOptions options;
  if (a.has("--seed")) options.seed = static_cast<uint64_t>(a.get_int("--seed", 0, 0, INT64_MAX));
  const std::string out = a.require("--out");
  if (check_model_destination(out) && !a.has("--force"))
    throw AtlasError("--out " + out + " already holds a model; pass --force to replace it");
  Model model = load_model("preset:" + a.require("--preset"), options);
  save_model(model, out);
  std::printf("wrote %s (%s, %lld parameters)\n", out.c_str(), model.config().name.c_str(),
              static_cast<long long>(parameter_count(model.config())));
  return 0;
}

namespace {

// The weights as the engine will hold them: bytes per encoding (a quantized or 16-bit matrix
// stays as the file stores it; the rest is float32), and how products with quantized ones are
// computed. From the headers: nothing is loaded.
void print_held_weights(const HeldPlan& plan, bool each_tensor) {
  constexpr double kMb = 1024.0 * 1024.0;
  if (each_tensor)
    for (const HeldTensorInfo& t : plan.tensors)
      std::printf("  tensor %s %s %s %.2f MB\n", t.name.c_str(), shape_str(t.shape).c_str(),
                  t.type.c_str(), t.bytes / kMb);
  const HeldWeights held = plan.summary();
  std::printf("weights as held: %.1f MB", held.total_bytes / kMb);
  const char* sep = " (";
  for (const HeldWeights::Encoding& e : held.by_type) {
    std::printf("%s%s %.1f MB in %d tensors", sep, e.type.c_str(), e.bytes / kMb, e.tensors);
    sep = ", ";
  }
  std::printf("%s\n", held.by_type.empty() ? "" : ")");
  if (held.quantized)
    std::printf("quantized products: %s\n",
                quantized_products() == QuantizedProducts::Exact
                    ? "exact (float32 activations; ATLAS_QUANTIZED_PRODUCTS=exact)"
                    : "int8 activations per 32 values, as llama.cpp (ATLAS_QUANTIZED_PRODUCTS=exact "
                      "for the dequantized model's float32 arithmetic)");
  const MemoryRoom room = available_memory();
  if (room.bytes == 0) return;
  std::printf("memory available: %s (%s)%s\n", format_bytes(room.bytes).c_str(), room.limit.c_str(),
              held.total_bytes > 0.9 * double(room.bytes) ? "; the weights do not fit: loading is refused" : "");
}

}  // namespace

int cmd_info(const std::vector<std::string>& args) {
  if (wants_help(args,
                 "usage: atlas info MODEL [--length N] [--backend cpu|vulkan|auto] [--device D]\n"
                 "                  [--tensors]\n"
                 "  Architecture, parameter count, the weights as held (bytes per encoding:\n"
                 "  quantized GGUF and 16-bit matrices stay as the file stores them; --tensors:\n"
                 "  one line per tensor, named as in the file), the memory available, and\n"
                 "  estimated memory and FLOPs of one forward pass at N tokens (default:\n"
                 "  min(512, max_positions)). Read from the config and the weights' headers:\n"
                 "  no weights are loaded, so a model too large to open is described too.\n"))
    return 0;
  Args a(args, {{"--length", "--backend", "--device"}, {"--tensors"}});
  if (a.positionals().size() != 1) throw AtlasError("info takes one MODEL");
  const ModelHeader header = read_model_header(a.positionals()[0]);  // no weights are read
  const ModelConfig& c = header.config;
  const int64_t length = a.get_int("--length", std::min<int64_t>(512, c.max_positions), 1,
                                   c.max_positions);
  const CostEstimate e = estimate_cost(c, length);
  const double mb = 1024.0 * 1024.0;
  std::printf("%s", describe_architecture(c).c_str());
  std::printf("parameters: %lld (%.1f MB as float32)\n", static_cast<long long>(e.parameters),
              e.weight_bytes / mb);
  print_held_weights(header.held, a.has("--tensors"));
  std::printf("at %lld tokens:\n", static_cast<long long>(length));
  std::printf("  attention + QK memory per example: %.1f MB (heads*L^2 + heads*d_head*L floats "
              "per attention layer)\n", e.attention_bytes / mb);
  std::printf("  other activations: %.1f MB\n", e.activation_bytes / mb);
  std::printf("  forward FLOPs: %.3g (%.2f GFLOP)\n", e.flops, e.flops / 1e9);
  std::unique_ptr<Backend> be = choose_backend(a.get_or("--backend", "cpu"), a.get_or("--device", ""));
  std::printf("backend: %s\n", be ? be->name().c_str() : "cpu (Eigen)");
  if (be) {
    for (const auto& f : be->fallbacks()) std::printf("  CPU fallback: %s\n", f.c_str());
    // Variant attention the backend has no kernel for runs on the host in every forward.
    for (const auto& f : expected_fallbacks(c, *be)) std::printf("  CPU fallback: %s\n", f.c_str());
  }
  return 0;
}

}  // namespace atlas::cli
