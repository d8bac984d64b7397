// atlas compare: two inputs on one model, or one input on two models of the same shape
// (core/analysis/attention_compare.h): per-head distances as a table, CSV or JSON, and the
// views the app's Compare panel draws (difference, side by side, per-head grid) as figures.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "app/cli/commands.h"
#include "app/cli/output_file.h"
#include "core/analysis/attention_compare.h"
#include "core/analysis/weight_check.h"
#include "core/formats/atomic_file.h"
#include "core/formats/input_file.h"
#include "core/formats/model_io.h"
#include "core/tensor/error.h"

#if defined(ATLAS_HAVE_UI)
#include "app/cli/headless_qt.h"
#include "app/cli/map_selection.h"
#include "ui/tools/compare_view.h"
#include "ui/export/figure_export.h"
#endif

namespace atlas::cli {
namespace {

const char* kCompareUsage =
    "usage: atlas compare MODEL_A [MODEL_B] (--text S | --text-file F) [--text-b S | --text-file-b F]\n"
    "                     [--target S] [--target-b S] [--csv FILE | --json | --out FILE] [--top K]\n"
    "                     [--view difference|side|heads] [--stack S] [--kind K] [--layer L | --step N]\n"
    "                     [--segment S] [--head H|mean|max] [--dpi N]\n"
    "  Compares the attention of two runs: the same model on two inputs (--text-b), or two models\n"
    "  of the same shape on one input (MODEL_B; e.g. two checkpoints, a model and its fine-tune),\n"
    "  or both. Maps are matched by name and need the same number of tokens.\n"
    "  Per head: mean_tv, the mean over query rows of the total variation distance\n"
    "  1/2 sum_j |A_ij - B_ij| (0 identical, 1 disjoint), and max_abs, the largest |A_ij - B_ij|.\n"
    "  Without an output: the table and the --top K (default 5) most different heads.\n"
    "  --csv FILE / --json   every head's distances\n"
    "  --out FILE.(svg|pdf|png|npy|csv)  a view of the map --stack/--kind/--layer/--head choose:\n"
    "      difference  A - B in diverging colours (default)\n"
    "      side        A and B side by side on one colour scale\n"
    "      heads       the per-head mean_tv of the map family as a layers x heads grid\n";

void write_differences_csv(const std::string& path, const std::vector<HeadDifference>& rows) {
  std::ostringstream out;
  out.precision(9);
  out << "map,stack,sublayer,layer,segment,step,head,mean_tv,max_abs\n";
  for (const auto& r : rows)
    out << attention_array_name(r.map) << ',' << r.map.stack << ',' << r.map.sublayer << ','
        << r.map.layer << ',' << r.map.segment << ',' << r.map.step << ',' << r.head << ','
        << r.mean_tv << ',' << r.max_abs << '\n';
  write_file_atomically(path, out.str());
}

nlohmann::json differences_json(const std::vector<HeadDifference>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : rows)
    out.push_back({{"map", attention_array_name(r.map)},
                   {"stack", r.map.stack},
                   {"sublayer", r.map.sublayer},
                   {"layer", r.map.layer},
                   {"segment", r.map.segment},
                   {"step", r.map.step},
                   {"head", r.head},
                   {"mean_tv", r.mean_tv},
                   {"max_abs", r.max_abs}});
  return out;
}

#if defined(ATLAS_HAVE_UI)
void write_view(const Args& a, const Trace& ta, const Trace& tb, const std::string& out) {
  const std::string view = a.get_or("--view", "difference");
  const auto sel = select_attention_map(a, ta, true);
  if (sel->head < 0 && sel->head != ui::HeadMean && sel->head != ui::HeadMax)
    throw AtlasError("--head: compare takes a head number, mean or max");
  ui::FigureSpec spec;
  spec.dpi = static_cast<int>(a.get_int("--dpi", 150, 10, 2400));
  ui::HeatmapData data;
  if (view == "difference") {
    data = ui::compareDifference(ta, tb, *sel);
    spec.mapping = ui::compareDifferenceMapping();
  } else if (view == "side") {
    data = ui::compareSideBySide(ta, tb, *sel);
  } else {
    data = ui::compareHeadGrid(ta, tb, *sel);
  }
  ui::writeFigure(ui::heatmapFigureContent(std::move(data), spec), spec.dpi, QString::fromStdString(out));
}
#endif

}  // namespace

int cmd_compare(const std::vector<std::string>& args) {
  if (wants_help(args, kCompareUsage)) return 0;
  Args a(args, {{"--text", "--text-file", "--text-b", "--text-file-b", "--target", "--target-b", "--csv", "--out",
                 "--top", "--view", "--stack", "--kind", "--layer", "--step", "--segment", "--head", "--dpi"},
                {"--json"}});
  const auto& models = a.positionals();
  if (models.empty() || models.size() > 2)
    throw AtlasError("compare takes MODEL_A and optionally MODEL_B (see atlas compare --help)");
  if (int(a.has("--text")) + int(a.has("--text-file")) != 1)
    throw AtlasError("compare needs exactly one of --text, --text-file");
  if (a.has("--text-b") && a.has("--text-file-b")) throw AtlasError("give --text-b or --text-file-b, not both");
  const bool other_input = a.has("--text-b") || a.has("--text-file-b") || a.has("--target-b");
  if (models.size() == 1 && !other_input)
    throw AtlasError("compare needs a second model (MODEL_B) or a second input (--text-b), or both");
  if (int(a.has("--csv")) + int(a.has("--json")) + int(a.has("--out")) > 1)
    throw AtlasError("compare writes one of --csv, --json, --out");
  const std::string view = a.get_or("--view", "difference");
  if (view != "difference" && view != "side" && view != "heads")
    throw AtlasError("--view '" + view + "' is not one of difference, side, heads");
  if (a.has("--view") && !a.has("--out")) throw AtlasError("--view chooses the figure of --out; give --out FILE");
  if (auto f = a.get("--csv")) check_output_file("--csv", *f);
  std::string out_ext;
  if (auto f = a.get("--out")) {
    check_output_file("--out", *f);
    out_ext = lowercase_extension(*f);
    if (out_ext != "svg" && out_ext != "pdf" && out_ext != "png" && out_ext != "npy" && out_ext != "csv")
      throw AtlasError("--out " + *f + ": unknown format \"" + out_ext + "\" (use .svg, .pdf, .png, .npy or .csv)");
#if !defined(ATLAS_HAVE_UI)
    throw AtlasError("--out draws the app's views, which need the Qt UI this atlas was built without "
                     "(ATLAS_GUI=OFF); use --csv or --json");
#endif
  }
  const int64_t top = a.get_int("--top", 5, 0, 100000);
#if defined(ATLAS_HAVE_UI)
  check_index_syntax(a);  // before the runs; their ranges once they are in
#endif
  const std::string text_a = a.has("--text") ? a.require("--text") : read_input_file(a.require("--text-file"), InputKind::Text);
  const std::string text_b = a.has("--text-b")        ? a.require("--text-b")
                             : a.has("--text-file-b") ? read_input_file(a.require("--text-file-b"), InputKind::Text)
                                                      : text_a;
  const std::string target_a = a.get_or("--target", "");
  const std::string target_b = a.get_or("--target-b", target_a);

#if defined(ATLAS_HAVE_UI)
  auto app = a.has("--out") ? make_headless_app() : nullptr;
#endif
  const Model model_a = load_model(models[0]);
  std::unique_ptr<Model> loaded_b = models.size() == 2 ? std::make_unique<Model>(load_model(models[1])) : nullptr;
  const Model& model_b = loaded_b ? *loaded_b : model_a;
  for (const Model* m : std::initializer_list<const Model*>{&model_a, loaded_b.get()}) {
    if (!m) continue;
    for (const auto& w : m->warnings()) std::fprintf(stderr, "warning: %s\n", printable(w).c_str());
    for (const auto& w : weight_warnings(*m)) std::fprintf(stderr, "warning: %s\n", printable(w).c_str());
  }
  RunOptions options;
  const RunResult ra = model_a.run(text_a, target_a, options);
  const RunResult rb = model_b.run(text_b, target_b, options);
  const std::vector<HeadDifference> rows = compare_attention(ra.trace, rb.trace);

  if (auto f = a.get("--csv")) {
    write_differences_csv(*f, rows);
    std::printf("wrote %zu heads to %s\n", rows.size(), f->c_str());
    return 0;
  }
  if (a.has("--json")) {
    std::printf("%s\n", differences_json(rows).dump(1).c_str());
    return 0;
  }
#if defined(ATLAS_HAVE_UI)
  if (auto f = a.get("--out")) {
    write_view(a, ra.trace, rb.trace, *f);
    std::printf("wrote the %s view to %s\n", view.c_str(), f->c_str());
    return 0;
  }
#endif
  std::printf("%-28s %4s %10s %10s\n", "map", "head", "mean_tv", "max_abs");
  for (const auto& r : rows)
    std::printf("%-28s %4lld %10.4f %10.4f\n", attention_array_name(r.map).c_str(),
                (long long)r.head, r.mean_tv, r.max_abs);
  std::vector<const HeadDifference*> order;
  for (const auto& r : rows) order.push_back(&r);
  std::stable_sort(order.begin(), order.end(), [](auto* x, auto* y) { return x->mean_tv > y->mean_tv; });
  if (top > 0) {
    std::printf("\nmost different:");
    for (int64_t k = 0; k < top && k < int64_t(order.size()); ++k)
      std::printf("  %s head %lld (%.3f)", attention_array_name(order[size_t(k)]->map).c_str(),
                  (long long)order[size_t(k)]->head, order[size_t(k)]->mean_tv);
    std::printf("\n");
  }
  return 0;
}

}  // namespace atlas::cli
