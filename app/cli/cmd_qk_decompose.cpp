// atlas qk-decompose: why a head attends from a query to a key (core/analysis/qk_decomposition.h):
// the pre-softmax score split into query-side x key-side contributions of every earlier
// component, through the attention's norm frozen at the run's scale; with --value, the head's
// output at the query split over the key-side components. A table of the largest cells, or the
// matrix (.npy) and a CSV for scripts.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "app/cli/commands.h"
#include "app/cli/tool_figure.h"
#include "app/cli/output_file.h"
#include "core/analysis/qk_decomposition.h"
#include "core/analysis/weight_check.h"
#include "core/backend/backend.h"
#include "core/formats/atomic_file.h"
#include "core/formats/input_file.h"
#include "core/formats/model_io.h"
#include "core/formats/npy.h"
#include "core/input/patch_input.h"
#include "core/tensor/error.h"
#if defined(ATLAS_HAVE_UI)
#include "ui/tools/qk_decomposition_figure.h"
#endif

namespace atlas::cli {
namespace {

const char* kQkUsage =
    "usage: atlas qk-decompose MODEL (--text S | --text-file F) --layer L --head H --query I --key J\n"
    "                          [--value] [--out-npy F.npy] [--csv F.csv] [--top K]\n"
    "  Why head H of layer L attends from query position I to key position J: its pre-softmax\n"
    "  score split into a matrix of query-side x key-side contributions of every component\n"
    "  written into the residual stream before layer L (token embedding, absolute positions,\n"
    "  each earlier head, attention output bias and MLP), with the attention's norm frozen at the\n"
    "  run's scale; its shift and the q/k biases are the \"bias\" row and column. RoPE rotates\n"
    "  each part; ALiBi and Shaw's relative keys are extra columns. The cells sum to the score.\n"
    "    --value        also split the head's output at I over the key-side components\n"
    "                   (pattern x value through W_V and W_O), projected on that output\n"
    "    --out-npy F    the matrix [rows, columns] (float32 .npy); the names are in the CSV\n"
    "    --csv F        kind,query_component,key_component,value: every cell (kind score),\n"
    "                   with --value every component's projection (kind value)\n"
    "    --top K        the K largest cells (and value parts) in the table (default 12)\n"
    "  Transformer-XL: I and J are positions in the whole text; I's segment follows from it and J\n"
    "  may be in that segment's memory. Its terms are named: rows \"xl.u (global content bias)\"\n"
    "  (term c) and \"xl.v (global position bias)\", column \"xl.relative_position\" (W_kR R_{i-j}):\n"
    "  (a) content x content, (b) content x relative, (c) u x content, (d) v x relative; a post-norm\n"
    "  stack's norms are frozen and their betas are components.\n"
    "  Supported: pre-norm decoder-only or encoder-only models of standard layers with softmax\n"
    "  attention and absolute, RoPE, ALiBi or Shaw positions; Transformer-XL (pre- or post-norm,\n"
    "  not GTrXL's gates). Formulas: docs/causal.md\n";

std::string qk_csv(const QkDecomposition& r) {
  std::ostringstream out;
  out.precision(12);
  out << "kind,query_component,key_component,value\n";
  for (size_t a = 0; a < r.rows.size(); ++a)
    for (size_t b = 0; b < r.columns.size(); ++b)
      out << "score," << r.rows[a] << ',' << r.columns[b] << ',' << r.cell(a, b) << '\n';
  out << "score_total,,," << r.total << '\n' << "score_traced,,," << r.score << '\n';
  for (size_t c = 0; c < r.value_names.size(); ++c)
    out << "value,," << r.value_names[c] << ',' << r.value_projection[c] << '\n';
  return out.str();
}

void write_qk_npy(const std::string& path, const QkDecomposition& r) {
  Tensor t({int64_t(r.rows.size()), int64_t(r.columns.size())});
  for (size_t k = 0; k < r.cells.size(); ++k) t.data[k] = float(r.cells[k]);
  write_npy(path, t, DType::F32);
}

int64_t qk_position(const Args& a, const char* key) { return a.get_int(key, 0, 0, int64_t{1} << 40); }

}  // namespace

int cmd_qk_decompose(const std::vector<std::string>& args) {
  if (wants_help(args, (std::string(kQkUsage) + kToolFigureUsage).c_str())) return 0;
  Args a(args, {{"--text", "--text-file", "--layer", "--head", "--query", "--key", "--out-npy", "--csv", "--top",
                 "--figure", "--plot"},
                {"--value"}});
  if (a.positionals().size() != 1) throw AtlasError("qk-decompose takes one MODEL (see atlas qk-decompose --help)");
  if (int(a.has("--text")) + int(a.has("--text-file")) != 1)
    throw AtlasError("qk-decompose needs exactly one of --text, --text-file");
  for (const char* key : {"--layer", "--head", "--query", "--key"})
    if (!a.has(key)) throw AtlasError(std::string("qk-decompose needs ") + key + " (see atlas qk-decompose --help)");
  QkRequest req{qk_position(a, "--layer"), qk_position(a, "--head"), qk_position(a, "--query"), qk_position(a, "--key"),
                a.has("--value")};
  const int64_t top = a.get_int("--top", 12, 0, 100000);
  if (auto f = a.get("--out-npy")) check_output_file("--out-npy", *f);
  if (auto f = a.get("--csv")) check_output_file("--csv", *f);
  check_tool_figure_args(a);

  const Model model = load_model(a.positionals()[0]);
  for (const auto& w : model.warnings()) std::fprintf(stderr, "warning: %s\n", printable(w).c_str());
  for (const auto& w : weight_warnings(model)) std::fprintf(stderr, "warning: %s\n", printable(w).c_str());
  if (const std::string why = qk_decomposition_refusal(model.config()); !why.empty())
    throw AtlasError("qk-decompose: " + why);
  if (is_patch_model(model.config()))
    throw AtlasError("qk-decompose reads text; an image model's decomposition is not offered by the CLI");
  const std::string text = a.has("--text") ? a.require("--text") : read_input_file(a.require("--text-file"), InputKind::Text);
  const std::vector<TokenInfo> source = model.tokenize(text, "").first;
  // The parts are formed from dequantized weights; the run multiplies by them too, so the cells
  // sum to its score (int8-rounded activations would move q and k by ~1e-3: docs/causal.md).
  set_quantized_products(QuantizedProducts::Exact);
  const QkDecomposition r = qk_decomposition(model, source, req);

  if (auto f = a.get("--out-npy")) write_qk_npy(*f, r);
  if (auto f = a.get("--csv")) write_file_atomically(*f, qk_csv(r));
#if defined(ATLAS_HAVE_UI)
  write_tool_figure(a, [&] {
    QStringList labels;
    for (const TokenInfo& t : source) labels << QString::fromStdString(t.label);
    return ui::qkDecompositionPlots(r, labels);
  }, "QK decomposition");
#endif
  std::printf("layer %lld head %lld (key/value head %lld): query %lld \"%s\" -> key %lld \"%s\"\n", (long long)r.layer,
              (long long)r.head, (long long)r.kv_head, (long long)r.query,
              printable(source[size_t(r.query)].label, 40).c_str(), (long long)r.key,
              printable(source[size_t(r.key)].label, 40).c_str());
  if (r.segment >= 0)
    std::printf("Transformer-XL segment %lld; the key is %s\n", (long long)r.segment,
                r.key_in_memory ? "in the memory (an earlier segment's cached layer input)" : "in the query's segment");
  std::printf("score %.6g (traced), sum of %zu x %zu cells %.6g; scale %.6g, frozen norm scales %.6g (query) %.6g (key)\n",
              r.score, r.rows.size(), r.columns.size(), r.total, r.scale, r.query_norm_scale, r.key_norm_scale);
  std::vector<std::pair<size_t, size_t>> order;
  for (size_t x = 0; x < r.rows.size(); ++x)
    for (size_t y = 0; y < r.columns.size(); ++y) order.push_back({x, y});
  std::stable_sort(order.begin(), order.end(), [&](const auto& u, const auto& v) {
    return std::fabs(r.cell(u.first, u.second)) > std::fabs(r.cell(v.first, v.second));
  });
  std::printf("  %-28s %-28s %12s\n", "query side", "key side", "contribution");
  for (int64_t k = 0; k < top && k < int64_t(order.size()); ++k)
    std::printf("  %-28s %-28s %+12.6g\n", r.rows[order[size_t(k)].first].c_str(),
                r.columns[order[size_t(k)].second].c_str(), r.cell(order[size_t(k)].first, order[size_t(k)].second));
  if (req.value) {
    double norm2 = 0;
    for (double v : r.head_output) norm2 += v * v;
    std::printf("value path: the head's output at query %lld (|o W_O| = %.6g), projected parts:\n", (long long)r.query,
                std::sqrt(norm2));
    std::vector<size_t> idx(r.value_names.size());
    for (size_t k = 0; k < idx.size(); ++k) idx[k] = k;
    std::stable_sort(idx.begin(), idx.end(), [&](size_t u, size_t v) {
      return std::fabs(r.value_projection[u]) > std::fabs(r.value_projection[v]);
    });
    for (int64_t k = 0; k < top && k < int64_t(idx.size()); ++k)
      std::printf("  %-28s %+12.6g\n", r.value_names[idx[size_t(k)]].c_str(), r.value_projection[idx[size_t(k)]]);
  }
  return 0;
}

}  // namespace atlas::cli
