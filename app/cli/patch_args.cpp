// The flags and files atlas patch and atlas attribute share (patch_args.h).
#include "app/cli/patch_args.h"

#if defined(ATLAS_HAVE_UI)
#include <QStringList>

#include "ui/tools/patching_figure.h"
#endif

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <tuple>

#include "core/analysis/ablation_sweep.h"
#include "core/formats/atomic_file.h"
#include "core/formats/npy.h"
#include "core/tensor/error.h"

namespace atlas::cli {

PatchSpec parse_patch_spec(const Args& a, const std::string& verb, std::vector<std::string>& tokens,
                           bool path_site) {
  if (a.positionals().size() != 1) throw AtlasError(verb + " takes one MODEL (see atlas " + verb + " --help)");
  if (!a.has("--clean") || !a.has("--corrupted")) throw AtlasError(verb + " needs --clean TEXT and --corrupted TEXT");
  if (!a.has("--site"))
    throw AtlasError(verb + " needs --site resid, attn, mlp, head, head-pos, q, k, v" +
                     (path_site ? ", pattern or path" : " or pattern"));
  if (!a.has("--metric")) throw AtlasError(verb + " needs --metric logit-diff, prob, kl or loss");
  PatchSpec spec;
  if (!(path_site && a.require("--site") == "path")) spec.site = parse_patch_site(a.require("--site"), "--site");
  spec.direction = parse_patch_direction(a.get_or("--direction", "denoise"), "--direction");
  spec.metric = parse_patch_metric(a.require("--metric"), "--metric");
  tokens.clear();
  if (auto t = a.get("--tokens")) {
    std::stringstream in(*t);
    for (std::string part; std::getline(in, part, ',');) tokens.push_back(part);
    if (!t->empty() && t->back() == ',') tokens.push_back("");
  }
  const size_t want_tokens = spec.metric == PatchMetric::LogitDiff ? 2 : spec.metric == PatchMetric::KL ? 0 : 1;
  if (tokens.size() != want_tokens)
    throw AtlasError(std::string("--metric ") + patch_metric_name(spec.metric) + " needs " +
                     (want_tokens == 2 ? "--tokens A,B (two tokens)" : want_tokens == 1 ? "--tokens A (one token)" : "no --tokens") +
                     ", got " + std::to_string(tokens.size()));
  return spec;
}

PatchInputs patch_inputs(const Model& model, const Args& a, const std::vector<std::string>& tokens, PatchSpec& spec,
                         bool check, bool targets) {
  if (tokens.size() > 0) spec.token_a = single_token_id(model, tokens[0], "--tokens");
  if (tokens.size() > 1) spec.token_b = single_token_id(model, tokens[1], "--tokens");
  PatchInputs in;
  const bool enc_dec = targets && model.config().architecture == Architecture::EncoderDecoder;
  const std::string clean_target = targets ? a.get_or("--target", "") : "";
  const std::string corrupted_target = targets ? a.get_or("--corrupted-target", clean_target) : "";
  if (targets && !enc_dec && (a.has("--target") || a.has("--corrupted-target")))
    throw AtlasError(std::string(a.has("--target") ? "--target" : "--corrupted-target") +
                     " is an encoder-decoder model's decoder input; this model is " +
                     (model.config().architecture == Architecture::Encoder ? "an encoder" : "a decoder") +
                     ": give its input with --clean and --corrupted only");
  std::tie(in.clean, in.clean_target) = model.tokenize(a.require("--clean"), clean_target);
  std::tie(in.corrupted, in.corrupted_target) = model.tokenize(a.require("--corrupted"), corrupted_target);
  if (!enc_dec) in.clean_target.clear(), in.corrupted_target.clear();
  const std::vector<TokenInfo>& measured = enc_dec ? in.clean_target : in.clean;
  if (auto p = a.get_index("--position"); p && p->value != -1)
    spec.position = check_index(*p, 0, int64_t(measured.size()) - 1,
                                std::string(enc_dec ? "the clean target has " : "the clean input has ") +
                                    std::to_string(measured.size()) + " tokens",
                                "or -1 for the last");
  if (check && enc_dec) check_patching(model, in.clean_input(), in.corrupted_input(), spec);
  else if (check) check_patching(model, in.clean, in.corrupted, spec);
  return in;
}

bool patch_site_per_head(PatchSite s) {
  return s == PatchSite::Head || s == PatchSite::Q || s == PatchSite::K || s == PatchSite::V || s == PatchSite::Pattern;
}

std::string patch_cell_label(const PatchResult& r, int64_t i, bool named_rows) {
  const int64_t n1 = r.shape[1];
  const int64_t cells_per_row = r.shape.size() == 3 ? n1 * r.shape[2] : n1, row = i / cells_per_row;
  const std::string head_sep = named_rows ? " H" : "H";
  const std::string name = named_rows && size_t(row) < r.row_names.size() ? r.row_names[size_t(row)]
                                                                            : "L" + std::to_string(row);
  if (r.shape.size() == 3) {
    const int64_t n2 = r.shape[2];
    return name + head_sep + std::to_string((i / n2) % n1) + " pos " + std::to_string(i % n2);
  }
  if (patch_site_per_head(r.spec.site)) return name + head_sep + std::to_string(i % n1);
  return name + " pos " + std::to_string(i % n1);
}

Tensor patch_values_f32(const std::vector<int64_t>& shape, const std::vector<double>& v) {
  Tensor t(shape);
  for (size_t i = 0; i < v.size(); ++i) t.data[i] = float(v[i]);
  return t;
}

void write_patch_csv(const std::string& path, const PatchResult& r) {
  std::ostringstream out;
  out.precision(9);
  const bool heads = patch_site_per_head(r.spec.site) || r.spec.site == PatchSite::HeadPos;
  const bool positions = !patch_site_per_head(r.spec.site);
  out << "layer,row" << (heads ? ",head" : "") << (positions ? ",position" : "") << ",metric,normalised\n";
  for (size_t i = 0; i < r.raw.size(); ++i) {
    const int64_t n = int64_t(i);
    const int64_t last = r.shape.back();
    const int64_t row = r.shape.size() == 3 ? n / (r.shape[1] * last) : n / last;
    out << row << ',' << (size_t(row) < r.row_names.size() ? r.row_names[size_t(row)] : "") << ',';
    if (r.shape.size() == 3) out << (n / last) % r.shape[1] << ',' << n % last;
    else out << n % last;
    out << ',';
    if (std::isfinite(r.raw[i])) out << r.raw[i];
    out << ',';
    if (std::isfinite(r.normalised[i])) out << r.normalised[i];
    out << '\n';
  }
  write_file_atomically(path, out.str());
}

void report_patch_grid(const PatchGrid& g, int64_t top, const std::function<std::string(int64_t)>& label,
                       const std::optional<std::string>& out, const std::function<void(const std::string&)>& write_csv) {
  if (g.clean == g.corrupted)
    std::printf("the clean and corrupted runs have the same metric: the normalised values are undefined (NaN)\n");
  std::vector<std::pair<double, int64_t>> order;
  for (int64_t i = 0; i < int64_t(g.raw.size()); ++i)  // NaN cells (outside a stack's length) are no cells
    if (!std::isnan(g.raw[size_t(i)])) order.push_back({std::fabs(g.raw[size_t(i)] - g.unpatched), i});
  std::stable_sort(order.begin(), order.end(), [](auto& x, auto& y) { return x.first > y.first; });
  if (top > 0) std::printf("strongest cells:\n");
  for (int64_t k = 0; k < top && k < int64_t(order.size()); ++k) {
    const int64_t i = order[size_t(k)].second;
    std::printf("  %-20s normalised %8.4f   metric %.6g\n", label(i).c_str(), g.normalised[size_t(i)], g.raw[size_t(i)]);
  }
  if (!out) return;
  const std::filesystem::path dir(*out);
  std::filesystem::create_directories(dir);
  write_npy((dir / "grid.npy").string(), patch_values_f32(g.shape, g.normalised), DType::F32);
  write_npy((dir / "raw.npy").string(), patch_values_f32(g.shape, g.raw), DType::F32);
  write_npy((dir / "runs.npy").string(), patch_values_f32({2}, {g.clean, g.corrupted}), DType::F32);
  write_csv((dir / "grid.csv").string());
  std::printf("wrote grid.npy, raw.npy, runs.npy (clean, corrupted) and grid.csv to %s\n", out->c_str());
}

#if defined(ATLAS_HAVE_UI)
ui::PanelPlot patch_grid_plot(const Args& a, const PatchResult& r, const std::vector<TokenInfo>& clean) {
  QStringList labels;
  for (const TokenInfo& t : clean) labels << QString::fromStdString(t.label);
  int64_t slice = ui::patchingStrongestPosition(r);
  if (auto s = a.get_index("--slice")) {
    const int64_t positions = r.shape.size() == 3 ? r.shape[2] : 0;
    slice = check_index(*s, 0, positions - 1, "the grid has " + std::to_string(positions) + " positions");
  }
  return ui::patchingGridPlot(r, labels, int(slice));
}
#endif

}  // namespace atlas::cli
