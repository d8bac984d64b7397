// atlas dla: direct logit attribution (core/analysis/logit_attribution.h): the logit of a token
// (or the difference of two) at each position split into the embeddings, every head, every
// MLP and the bias terms, through the final norm frozen at the run's scale. A table of the
// largest parts, or the arrays (.npy) and a CSV for scripts.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "app/cli/commands.h"
#include "app/cli/tool_figure.h"
#include "core/analysis/ablation_sweep.h"
#include "core/analysis/logit_attribution.h"
#include "core/analysis/weight_check.h"
#include "core/formats/atomic_file.h"
#include "core/formats/input_file.h"
#include "core/formats/model_io.h"
#include "core/formats/npy.h"
#include "core/input/patch_input.h"
#include "core/tensor/error.h"
#if defined(ATLAS_HAVE_UI)
#include "ui/tools/dla_figure.h"
#endif

namespace atlas::cli {
namespace {

const char* kDlaUsage =
    "usage: atlas dla MODEL (--text S | --text-file F) [--position P]\n"
    "                 [--token T | --tokens A,B] [--per-source] [--out DIR] [--csv] [--top K]\n"
    "  Direct logit attribution: the logit of a token at a position split into what each\n"
    "  component writes into the residual stream, through the final norm with its scale frozen\n"
    "  at the run's value. The parts (embeddings, each layer's heads, attention output bias,\n"
    "  MLP, the final norm's shift, the output bias) sum to the model's logit.\n"
    "    --position P   the position attributed (default: every position)\n"
    "    --token T      the token attributed (default: the model's prediction at each position);\n"
    "                   a token's text (must be one token) or its id as #ID\n"
    "    --tokens A,B   the logit difference logit[A] - logit[B]\n"
    "    --per-source   also split each head's part over the key positions it reads\n"
    "    --out DIR      writes positions, tokens (int32) and heads [P, layers, heads],\n"
    "                   attn_bias, mlp [P, layers], embed_tokens, embed_positions, norm_bias,\n"
    "                   output_bias, total, logit [P] (float32 .npy), per_source\n"
    "                   [layers, heads, P, keys] with --per-source, and dla.csv\n"
    "    --csv          the CSV on stdout instead of the table\n"
    "    --top K        the K largest parts per position in the table (default 10)\n"
    "  Supported: pre-norm decoder-only or encoder-only models of standard layers (GPT-2, the\n"
    "  Llama family, tiny-decoder, tiny-llama). Formulas and conventions: docs/causal.md\n";

struct DlaPart {
  std::string component;  // embed_tokens, head, mlp, ...
  int64_t layer = -1, head = -1;
  double value = 0;
  std::string label() const {
    if (component == "head") return "L" + std::to_string(layer) + "H" + std::to_string(head);
    if (layer >= 0) return component + " L" + std::to_string(layer);
    return component;
  }
};

std::vector<DlaPart> dla_parts_of(const LogitAttribution& r, int64_t q) {
  std::vector<DlaPart> out;
  const size_t p = size_t(q);
  out.push_back({"embed_tokens", -1, -1, r.embed_tokens[p]});
  out.push_back({"embed_positions", -1, -1, r.embed_positions[p]});
  for (int64_t l = 0; l < r.layers; ++l) {
    for (int64_t h = 0; h < r.heads; ++h) out.push_back({"head", l, h, r.head_part(q, l, h)});
    out.push_back({"attn_bias", l, -1, r.attn_bias[size_t(q * r.layers + l)]});
    out.push_back({"mlp", l, -1, r.mlp[size_t(q * r.layers + l)]});
  }
  out.push_back({"norm_bias", -1, -1, r.norm_bias[p]});
  out.push_back({"output_bias", -1, -1, r.output_bias[p]});
  return out;
}

std::string dla_csv(const LogitAttribution& r) {
  std::ostringstream out;
  out.precision(9);
  out << "position,token,against,component,layer,head,value\n";
  for (int64_t q = 0; q < int64_t(r.positions.size()); ++q) {
    auto row = [&](const std::string& component, int64_t layer, int64_t head, double v) {
      out << r.positions[size_t(q)] << ',' << r.tokens[size_t(q)] << ',';
      if (r.against >= 0) out << r.against;
      out << ',' << component << ',';
      if (layer >= 0) out << layer;
      out << ',';
      if (head >= 0) out << head;
      out << ',' << v << '\n';
    };
    for (const DlaPart& part : dla_parts_of(r, q)) row(part.component, part.layer, part.head, part.value);
    row("total", -1, -1, r.total[size_t(q)]);
    row("logit", -1, -1, r.logit[size_t(q)]);
  }
  return out.str();
}

void write_dla_dir(const std::string& dir, const LogitAttribution& r) {
  if (std::filesystem::exists(dir) && !std::filesystem::is_directory(dir))
    throw AtlasError("--out " + dir + " exists and is not a folder");
  std::filesystem::create_directories(dir);
  const int64_t P = int64_t(r.positions.size());
  auto put = [&](const std::string& name, Shape shape, const std::vector<double>& v) {
    Tensor t(std::move(shape));
    for (size_t k = 0; k < v.size(); ++k) t.data[k] = float(v[k]);
    write_npy((std::filesystem::path(dir) / (name + ".npy")).string(), t, DType::F32);
  };
  auto put_ids = [&](const std::string& name, const std::vector<int64_t>& v) {
    Tensor t({P});
    for (size_t k = 0; k < v.size(); ++k) t.data[k] = float(v[k]);
    write_npy((std::filesystem::path(dir) / (name + ".npy")).string(), t, DType::I32);
  };
  put_ids("positions", r.positions);
  put_ids("tokens", r.tokens);
  put("heads", {P, r.layers, r.heads}, r.head);
  put("attn_bias", {P, r.layers}, r.attn_bias);
  put("mlp", {P, r.layers}, r.mlp);
  put("embed_tokens", {P}, r.embed_tokens);
  put("embed_positions", {P}, r.embed_positions);
  put("norm_bias", {P}, r.norm_bias);
  put("output_bias", {P}, r.output_bias);
  put("total", {P}, r.total);
  put("logit", {P}, r.logit);
  if (!r.per_source.empty()) put("per_source", {r.layers, r.heads, P, r.keys}, r.per_source);
  write_file_atomically((std::filesystem::path(dir) / "dla.csv").string(), dla_csv(r));
}

std::string dla_token_label(const Model& model, int64_t id) {
  if (id >= model.tokenizer().vocab_size()) return "#" + std::to_string(id);  // rows past the tokenizer's
  return printable(model.tokenizer().label(static_cast<int32_t>(id)), 40);
}

}  // namespace

int cmd_dla(const std::vector<std::string>& args) {
  if (wants_help(args, (std::string(kDlaUsage) + kToolFigureUsage +
                        "  --figure draws one position: --position P, by default the last.\n").c_str()))
    return 0;
  Args a(args, {{"--text", "--text-file", "--position", "--token", "--tokens", "--out", "--top", "--figure", "--plot"},
                {"--per-source", "--csv"}});
  if (a.positionals().size() != 1) throw AtlasError("dla takes one MODEL (see atlas dla --help)");
  if (int(a.has("--text")) + int(a.has("--text-file")) != 1) throw AtlasError("dla needs exactly one of --text, --text-file");
  if (a.has("--token") && a.has("--tokens"))
    throw AtlasError("dla takes one of --token T (a logit) and --tokens A,B (a logit difference)");
  const int64_t top = a.get_int("--top", 10, 0, 100000);
  const auto position = a.get_index("--position");
  check_tool_figure_args(a);

  const Model model = load_model(a.positionals()[0]);
  for (const auto& w : model.warnings()) std::fprintf(stderr, "warning: %s\n", printable(w).c_str());
  for (const auto& w : weight_warnings(model)) std::fprintf(stderr, "warning: %s\n", printable(w).c_str());
  if (const std::string why = logit_attribution_refusal(model.config()); !why.empty())
    throw AtlasError(why);
  if (is_patch_model(model.config()))
    throw AtlasError("dla reads text; an image model's attribution is not offered by the CLI");
  DlaRequest req;
  req.per_source = a.has("--per-source");
  if (auto t = a.get("--token")) req.token = single_token_id(model, *t, "--token");
  if (auto t = a.get("--tokens")) {
    const size_t comma = t->find(',');
    if (comma == std::string::npos || comma == 0 || comma + 1 == t->size())
      throw AtlasError("--tokens takes two tokens as A,B (a token's text or #ID each), got \"" + printable(*t) + "\"");
    req.token = single_token_id(model, t->substr(0, comma), "--tokens (first)");
    req.against = single_token_id(model, t->substr(comma + 1), "--tokens (second)");
  }
  const std::string text = a.has("--text") ? a.require("--text") : read_input_file(a.require("--text-file"), InputKind::Text);
  const std::vector<TokenInfo> source = model.tokenize(text, "").first;
  if (position) {
    const int64_t L = int64_t(source.size());
    req.positions = {(int64_t)check_index(*position, 0, L - 1, "this input has " + std::to_string(L) + " tokens")};
  } else if (a.has("--figure") && !source.empty()) {
    req.positions = {int64_t(source.size()) - 1};  // the figure draws one position
  }
  const LogitAttribution r = logit_attribution(model, source, req);

#if defined(ATLAS_HAVE_UI)
  write_tool_figure(a, [&] {
    return ui::dlaPlots(r, [&model](int64_t id) { return QString::fromStdString(dla_token_label(model, id)); });
  }, "Logit attribution");
#endif
  if (auto dir = a.get("--out")) {
    write_dla_dir(*dir, r);
    std::fprintf(stderr, "wrote the attribution of %zu position(s) to %s\n", r.positions.size(), dir->c_str());
  }
  if (a.has("--csv")) {
    std::fputs(dla_csv(r).c_str(), stdout);
    return 0;
  }
  for (int64_t q = 0; q < int64_t(r.positions.size()); ++q) {
    const size_t p = size_t(q);
    const int64_t i = r.positions[p];
    std::string what = "logit of \"" + dla_token_label(model, r.tokens[p]) + "\" (#" + std::to_string(r.tokens[p]) + ")";
    if (r.against >= 0)
      what += " - logit of \"" + dla_token_label(model, r.against) + "\" (#" + std::to_string(r.against) + ")";
    std::printf("position %lld \"%s\": %s = %.6g, sum of parts %.6g (frozen norm scale %.6g)\n", (long long)i,
                printable(source[size_t(i)].label, 40).c_str(), what.c_str(), r.logit[p], r.total[p], r.norm_scale[p]);
    std::vector<DlaPart> parts = dla_parts_of(r, q);
    std::stable_sort(parts.begin(), parts.end(), [](const DlaPart& x, const DlaPart& y) {
      return std::fabs(x.value) > std::fabs(y.value);
    });
    for (int64_t k = 0; k < top && k < int64_t(parts.size()); ++k)
      std::printf("  %-20s %+12.6g\n", parts[size_t(k)].label().c_str(), parts[size_t(k)].value);
  }
  return 0;
}

}  // namespace atlas::cli
