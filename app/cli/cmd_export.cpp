// `atlas export`: the app's figures from the command line, drawn by the same painter code
// as the desktop views, without a display (QT_QPA_PLATFORM=offscreen when none is set).
#include <string>
#include <vector>

#include "core/tensor/error.h"

#if defined(ATLAS_HAVE_UI)
#include <QFileInfo>
#include <QGuiApplication>
#include <QString>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>

#include "app/cli/ablation_args.h"
#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "app/cli/image_file.h"
#include "app/cli/image_run.h"
#include "app/cli/headless_qt.h"
#include "app/cli/map_selection.h"
#include "app/cli/output_file.h"
#include "app/cli/panel_export.h"
#include "core/analysis/weight_check.h"
#include "core/formats/input_file.h"
#include "ui/export/figure_export.h"
#include "ui/views/aggregate_heatmaps.h"
#include "ui/views/attention_heatmap.h"
#include "ui/views/attention_selection.h"
#include "ui/views/value_mapper.h"
#include "ui/panels/panel_chart.h"
#include "core/formats/model_io.h"

namespace atlas::cli {
namespace {

const char* kExportUsage =
    "usage: atlas export MODEL (--text S | --text-file F | --image FILE) [--target S]\n"
    "                    --out FILE.(svg|pdf|png|npy|csv)\n"
    "                    [--view heatmap|model|tokens|positional|similarity]\n"
    "                    [--stack encoder|decoder] [--kind attn|self_attn|cross_attn]\n"
    "                    [--layer L | --step N] [--segment S] [--head H|mean|max|rollout|flow]\n"
    "                    [--value-weighted]\n"
    "                    [--query Q]\n"
    "                    [--colormap viridis|magma|diverging] [--scale linear|log]\n"
    "                    [--normalize global|row] [--shared-scale] [--dpi N] [--width IN] [--height IN]\n"
    "                    [--title S] [--seed N] [--backend cpu|vulkan|auto] [--device D]\n"
    "                    [--maps auto|stored|on-demand]\n"
    "       atlas export MODEL (--text S | ...) --panel ID [--plot K|NAME] [--layer L] [--head H]\n"
    "                    [--query Q] (--out FILE | --list-plots)\n"
    "                    [--drop-heads L:H,... | --drop-layers L,... | --layerdrop-rate P]\n"
    "\n"
    "Runs MODEL (preset:NAME, a model folder or a .safetensors file) on the text, or on the image\n"
    "for a ViT or pixel model (as atlas run --image), and writes one\n"
    "figure of a view, drawn like the desktop app: SVG and PDF as vector graphics, PNG at --dpi\n"
    "(default 150), or the view's data as .npy (float32) or .csv.\n"
    "  heatmap     one layer (or step, segment) and head [Lq, Lk] (--head mean|max|rollout|flow;\n"
    "              rollout and flow run through --layer, by default the last; flow: max-flow,\n"
    "              every row up to 48 tokens, else one row: --query Q's, by default the decoder's\n"
    "              last or the encoder's first);\n"
    "              --value-weighted: alpha_ij |W^O_h v_j| of the head (Kobayashi et al. 2020)\n"
    "  model       every layer x head of one stack/kind (and segment); data [layers, heads, Lq, Lk];\n"
    "              each tile on its own maximum, or with --shared-scale all on the largest weight\n"
    "  tokens      lines from queries to keys (BertViz style) of one head\n"
    "  positional  the positional encoding P [L, d];  similarity: P P^T [L, L]\n"
    "Which attention: --stack and --kind choose a family (default: the first the run records,\n"
    "e.g. encoder attn or decoder self_attn), --layer its layer (default 0); a Universal\n"
    "Transformer's steps are chosen by --step N (from 1, the same as --layer N-1), a\n"
    "Transformer-XL's segments by --segment S (from 0, default 0; keys are the cached memory,\n"
    "marked \u21BA, then the segment). Head 0 by default. Works without a display.\n"
    "--panel ID draws a plot of one of the app's variant panels (their ids are listed below) as\n"
    "its Export button does: --plot picks it by number or by part of its name (default the\n"
    "first; --list-plots prints them), --layer, --head and --query the selection it follows\n"
    "(a value out of the run's range, or a part of the selection the panel does not follow, is\n"
    "refused, naming the valid range).\n"
    "The run traces what the panel reads; the ablation panel compares with the run that\n"
    "--drop-heads / --drop-layers / --layerdrop-rate give.\n";

// The --panel path: the panel's plots for this run and selection, listed or one written.
int export_panel_plot(const Args& args, const ui::PanelProvider& panel, const Model& model, RunResult& result,
                      const RunOptions& options, const AblationSpec& ablation, const ui::FigureSpec& fig,
                      const std::string& out) {
  add_panel_arrays(panel, model, result, options, ablation);
  const std::string title = panel.title.toStdString();
  if (!panel.available(result.trace))
    throw AtlasError("the " + title + " panel has nothing to draw for this model: it reads " + panel.arrays.toStdString());
  ui::PanelContext ctx = panel_context(args, panel, result.trace);
  ctx.tokenText = [&model](int32_t id) { return QString::fromStdString(model.tokenizer().label(id)); };
  const std::vector<ui::PanelPlot> plots = panel.plots(result.trace, ctx);
  if (args.has("--list-plots")) {
    for (size_t i = 0; i < plots.size(); ++i) std::printf("%zu: %s\n", i, plots[i].name.toUtf8().constData());
    return 0;
  }
  const ui::PanelPlot& plot = plots[choose_plot(plots, args.get_or("--plot", ""), title)];
  ui::writeFigure(ui::panelFigure(plot, fig), fig.dpi, QString::fromStdString(out));
  std::cerr << "wrote " << out << " (" << plot.name.toStdString() << ")\n";
  return 0;
}

double parsePositive(const std::string& key, const std::string& s) {
  try {
    size_t used = 0;
    const double v = std::stod(s, &used);
    if (used == s.size() && v > 0 && v <= 100) return v;
  } catch (const std::exception&) {
  }
  throw AtlasError(key + " '" + s + "' must be a size in inches between 0 and 100");
}

}  // namespace

int cmd_export(const std::vector<std::string>& argv) {
  if (wants_help(argv, kExportUsage)) {
#if defined(ATLAS_HAVE_UI)
    std::printf("Panels: %s\n", panel_ids().c_str());
#endif
    return 0;
  }
  ArgSpec spec;
  spec.options = {"--text",  "--text-file", "--image", "--target", "--out",    "--view",     "--stack",
                  "--kind",  "--layer",     "--step",   "--segment", "--head",  "--query",  "--dpi",  "--width",
                  "--height", "--title",    "--colormap", "--scale", "--normalize", "--seed",
                  "--backend", "--device", "--panel", "--plot", "--drop-heads", "--drop-layers", "--layerdrop-rate",
                  "--maps"};
  spec.flags = {"--value-weighted", "--shared-scale", "--list-plots"};
  const Args args(argv, spec);
  if (args.positionals().size() != 1)
    throw AtlasError("export needs exactly one MODEL (preset:NAME, folder or .safetensors); see atlas export --help");
  const bool listPlots = args.has("--list-plots");
  if (listPlots && !args.has("--panel")) throw AtlasError("--list-plots lists a panel's plots: give --panel ID");
  if (listPlots && args.has("--out")) throw AtlasError("give --out FILE or --list-plots, not both");
  std::optional<ui::PanelProvider> panel;
  if (auto id = args.get("--panel")) {
    if (args.has("--view")) throw AtlasError("give --view or --panel, not both");
    for (const char* flag : {"--value-weighted", "--shared-scale", "--segment", "--step", "--stack", "--kind"})
      if (args.has(flag)) throw AtlasError(std::string(flag) + " is for the attention views (--view), not --panel");
    panel = panel_provider(*id);
  } else {
    for (const char* flag : {"--plot", "--drop-heads", "--drop-layers", "--layerdrop-rate"})
      if (args.has(flag)) throw AtlasError(std::string(flag) + " goes with --panel ID");
  }
  const AblationSpec ablation = ablation_from_args(args);
  const std::string out = listPlots ? std::string() : args.require("--out");
  if (!listPlots) {
    check_output_file("--out", out);
    // Check the output format before spending a model run on it.
    const QString ext = QString::fromStdString(out).section('.', -1).toLower();
    if (!QString::fromStdString(out).contains('.') || !ui::figureFormats().contains(ext))
      throw AtlasError("--out '" + out + "': use a file name ending in ." + ui::figureFormats().join(", .").toStdString());
  }
  if (int(args.has("--text")) + int(args.has("--text-file")) + int(args.has("--image")) != 1)
    throw AtlasError("give exactly one of --text, --text-file or --image");
  if (args.has("--image") && args.has("--target"))
    throw AtlasError("--target is the decoder text of a text run; not with --image");
  const std::string text = args.has("--text")        ? args.require("--text")
                           : args.has("--text-file") ? read_input_file(args.require("--text-file"), InputKind::Text)
                                                     : std::string();
  // The image is read (and refused: FIFO, vector image, unknown format) before the model loads.
  std::optional<RgbImage> image;
  if (auto path = args.get("--image")) image = load_image(*path);

  ui::FigureSpec fig;
  fig.view = QString::fromStdString(args.get_or("--view", "heatmap"));
  if (!ui::figureViews().contains(fig.view))
    throw AtlasError("--view '" + fig.view.toStdString() + "' is not one of " + ui::figureViews().join(", ").toStdString());
  fig.dpi = static_cast<int>(args.get_int("--dpi", 150, 10, 2400));
  // Indices are integers (checked now, before a run is spent) in the run's range (checked once
  // it is in: --query against the chosen map's rows or the panel's positions).
  const std::optional<IndexArg> query = args.get_index("--query");
  check_index_syntax(args);
  fig.title = QString::fromStdString(args.get_or("--title", ""));
  if (args.has("--width") || args.has("--height")) {
    if (!args.has("--width") || !args.has("--height")) throw AtlasError("give both --width and --height (inches)");
    fig.sizeInches = QSizeF(parsePositive("--width", *args.get("--width")), parsePositive("--height", *args.get("--height")));
  }
  const std::string cmap = args.get_or("--colormap", "viridis");
  if (cmap != "viridis" && cmap != "magma" && cmap != "diverging")
    throw AtlasError("--colormap '" + cmap + "' is not one of viridis, magma, diverging");
  fig.mapping.colormap = ui::colormapFromKey(QString::fromStdString(cmap));
  const std::string scale = args.get_or("--scale", "linear");
  if (scale != "linear" && scale != "log") throw AtlasError("--scale '" + scale + "' is not linear or log");
  fig.mapping.scale = scale == "log" ? ui::ColorScale::Log : ui::ColorScale::Linear;
  const std::string norm = args.get_or("--normalize", "global");
  if (norm != "global" && norm != "row") throw AtlasError("--normalize '" + norm + "' is not global or row");
  fig.mapping.normalization = norm == "row" ? ui::Normalization::Row : ui::Normalization::Global;
  fig.mapping.sharedScale = args.has("--shared-scale");
  if (fig.mapping.sharedScale && fig.view != "model")
    throw AtlasError("--shared-scale is for --view model (one colour scale for every tile of the grid)");
  if (fig.mapping.sharedScale && norm == "row")
    throw AtlasError("--shared-scale and --normalize row contradict each other (one scale for all tiles vs one per row)");

  auto app = make_headless_app();
  LoadOptions lo;
  if (args.has("--seed")) lo.seed = static_cast<uint64_t>(args.get_int("--seed", 0, 0, (1LL << 62)));
  const Model model = load_model(args.positionals()[0], lo);
  for (const auto& w : model.warnings()) std::cerr << "warning: " << printable(w) << "\n";
  for (const auto& w : weight_warnings(model)) std::cerr << "warning: " << printable(w) << "\n";
  const std::unique_ptr<Backend> backend = choose_backend(args.get_or("--backend", "cpu"), args.get_or("--device", ""));
  RunOptions ro;
  ro.backend = backend.get();
  ro.trace.maps = map_storage_arg(args.get("--maps"), model.config());  // on request: figures read through OnDemandMap
  const bool valueWeighted = args.has("--value-weighted");
  if (valueWeighted && fig.view != "heatmap")
    throw AtlasError("--value-weighted draws the heatmap view; the " + fig.view.toStdString() + " view has no use for it");
  ro.trace.value_norms = valueWeighted;
  if (panel) trace_for_panel(*panel, ro.trace);
  RunResult result = image ? run_on_image(model, *image, ro).result : model.run(text, args.get_or("--target", ""), ro);
  for (const auto& w : output_warnings(result)) std::cerr << "warning: " << w << "\n";
  if (panel) return export_panel_plot(args, *panel, model, result, ro, ablation, fig, out);

  const bool needsAttention = fig.view == "heatmap" || fig.view == "model" || fig.view == "tokens";
  std::string label;
  if (auto sel = select_attention_map(args, result.trace, needsAttention, &label)) fig.selection = *sel;
  const bool flowRow = fig.view == "heatmap" && fig.selection.head == ui::HeadFlow;
  if (query && query->value != -1) {
    if (fig.view != "tokens" && !flowRow)
      throw AtlasError("--query picks the query whose lines the tokens view draws, or the row the heatmap's attention "
                       "flow computes for a long input (--head flow); the " + fig.view.toStdString() +
                       " view has no use for it");
    const AttentionMap* map = ui::findAttentionMap(result.trace, fig.selection);
    const long long rows = map ? static_cast<long long>(map->queries.count) : 0;
    fig.query = static_cast<int>(
        check_index(*query, 0, rows - 1, "the " + label + " has " + std::to_string(rows) + " queries", "or -1 for all"));
    if (flowRow) fig.selection.query = fig.query;
  }
  if (valueWeighted)
    ui::writeFigure(ui::heatmapFigureContent(ui::valueWeightedHeatmap(result.trace, fig.selection), fig), fig.dpi,
                    QString::fromStdString(out));
  else
    ui::exportFigure(fig, result.trace, QString::fromStdString(out));
  std::cerr << "wrote " << out << "\n";
  const AttentionMap* shown = needsAttention ? ui::findAttentionMap(result.trace, fig.selection) : nullptr;
  const bool npy = QFileInfo(QString::fromStdString(out)).suffix().toLower() == "npy";
  if (shown && shown->on_demand && shown->queries.count * shown->keys.count > ui::kExactHeatmapCells &&
      fig.view == "heatmap" && !valueWeighted && !npy)
    std::cerr << "note: " << shown->array << " is " << shown->queries.count << " x " << shown->keys.count
              << " and computed on request: the figure is its overview (each cell the largest weight of a "
                 "block); a .npy export writes every weight\n";
  return 0;
}

}  // namespace atlas::cli

#else  // built without the Qt UI: the verb exists but explains why it cannot run

namespace atlas::cli {
int cmd_export(const std::vector<std::string>&) {
  throw AtlasError("this atlas was built without the Qt UI (ATLAS_GUI=OFF), which draws the figures; "
                   "rebuild with -DATLAS_GUI=ON to use `atlas export`");
}
}  // namespace atlas::cli

#endif
