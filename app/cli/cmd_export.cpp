// `atlas export`: the app's figures from the command line, drawn by the same painter code
// as the desktop views, without a display (QT_QPA_PLATFORM=offscreen when none is set).
#include <string>
#include <vector>

#include "core/tensor/error.h"

#if defined(ATLAS_HAVE_UI)
#include <QGuiApplication>
#include <QString>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "app/cli/image_file.h"
#include "app/cli/image_run.h"
#include "app/cli/output_file.h"
#include "core/analysis/weight_check.h"
#include "core/formats/input_file.h"
#include "ui/figure_export.h"
#include "ui/heatmap_data.h"
#include "core/formats/model_io.h"

namespace atlas::cli {
namespace {

const char* kUsage =
    "usage: atlas export MODEL (--text S | --text-file F | --image FILE) [--target S]\n"
    "                    --out FILE.(svg|pdf|png|npy|csv)\n"
    "                    [--view heatmap|model|tokens|positional|similarity]\n"
    "                    [--stack encoder|decoder] [--kind attn|self_attn|cross_attn]\n"
    "                    [--layer L | --step N] [--segment S] [--head H|mean|max|rollout]\n"
    "                    [--query Q]\n"
    "                    [--colormap viridis|magma|diverging] [--scale linear|log]\n"
    "                    [--normalize global|row] [--dpi N] [--width IN] [--height IN]\n"
    "                    [--title S] [--seed N] [--backend cpu|vulkan|auto] [--device D]\n"
    "\n"
    "Runs MODEL (preset:NAME, a model folder or a .safetensors file) on the text, or on the image\n"
    "for a ViT or pixel model (as atlas run --image), and writes one\n"
    "figure of a view, drawn like the desktop app: SVG and PDF as vector graphics, PNG at --dpi\n"
    "(default 150), or the view's data as .npy (float32) or .csv.\n"
    "  heatmap     one layer (or step, segment) and head [Lq, Lk] (--head mean|max|rollout;\n"
    "              rollout runs through --layer, by default the last)\n"
    "  model       every layer x head of one stack/kind (and segment); data [layers, heads, Lq, Lk]\n"
    "  tokens      lines from queries to keys (BertViz style) of one head\n"
    "  positional  the positional encoding P [L, d];  similarity: P P^T [L, L]\n"
    "Which attention: --stack and --kind choose a family (default: the first the run records,\n"
    "e.g. encoder attn or decoder self_attn), --layer its layer (default 0); a Universal\n"
    "Transformer's steps are chosen by --step N (from 1, the same as --layer N-1), a\n"
    "Transformer-XL's segments by --segment S (from 0, default 0; keys are the cached memory,\n"
    "marked \u21BA, then the segment). Head 0 by default. Works without a display.\n";

int parseHead(const std::string& s) {
  if (s == "mean") return ui::HeadMean;
  if (s == "max") return ui::HeadMax;
  if (s == "rollout") return ui::HeadRollout;
  try {
    size_t used = 0;
    const int h = std::stoi(s, &used);
    if (used == s.size() && h >= 0) return h;
  } catch (const std::exception&) {
  }
  throw AtlasError("--head '" + s + "' is not a head number or one of mean, max, rollout");
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

// Qt needs an application object for fonts and painting; without a display use the
// offscreen platform so this works over ssh and in CI.
// Qt's start-up chatter (e.g. "XDG_RUNTIME_DIR not set") is not the user's business on a
// headless export; real warnings still reach stderr.
void quietMessages(QtMsgType type, const QMessageLogContext&, const QString& msg) {
  if (type == QtDebugMsg || type == QtInfoMsg) return;
  if (msg.startsWith("QStandardPaths:")) return;
  std::cerr << msg.toLocal8Bit().constData() << "\n";
}

std::unique_ptr<QGuiApplication> makeApp() {
  if (QGuiApplication::instance()) return nullptr;
  qInstallMessageHandler(quietMessages);
  const char* display = std::getenv("DISPLAY");
  const char* wayland = std::getenv("WAYLAND_DISPLAY");
  if ((!display || !*display) && (!wayland || !*wayland)) setenv("QT_QPA_PLATFORM", "offscreen", 0);
  static int argc = 1;
  static char name[] = "atlas";
  static char* argv[] = {name, nullptr};
  return std::make_unique<QGuiApplication>(argc, argv);
}

}  // namespace

int cmd_export(const std::vector<std::string>& argv) {
  if (wants_help(argv, kUsage)) return 0;
  ArgSpec spec;
  spec.options = {"--text",  "--text-file", "--image", "--target", "--out",    "--view",     "--stack",
                  "--kind",  "--layer",     "--step",   "--segment", "--head",  "--query",  "--dpi",  "--width",
                  "--height", "--title",    "--colormap", "--scale", "--normalize", "--seed",
                  "--backend", "--device"};
  const Args args(argv, spec);
  if (args.positionals().size() != 1)
    throw AtlasError("export needs exactly one MODEL (preset:NAME, folder or .safetensors); see atlas export --help");
  const std::string out = args.require("--out");
  check_output_file("--out", out);
  // Check the output format before spending a model run on it.
  const QString ext = QString::fromStdString(out).section('.', -1).toLower();
  if (!QString::fromStdString(out).contains('.') || !ui::figureFormats().contains(ext))
    throw AtlasError("--out '" + out + "': use a file name ending in ." + ui::figureFormats().join(", .").toStdString());
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
  // --query is checked against the chosen map's rows once the run is in (below).
  const long long query = args.get_int("--query", -1, -1, 1 << 30);
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

  auto app = makeApp();
  LoadOptions lo;
  if (args.has("--seed")) lo.seed = static_cast<uint64_t>(args.get_int("--seed", 0, 0, (1LL << 62)));
  const Model model = load_model(args.positionals()[0], lo);
  for (const auto& w : model.warnings()) std::cerr << "warning: " << printable(w) << "\n";
  for (const auto& w : weight_warnings(model)) std::cerr << "warning: " << printable(w) << "\n";
  const std::unique_ptr<Backend> backend = choose_backend(args.get_or("--backend", "cpu"), args.get_or("--device", ""));
  RunOptions ro;
  ro.backend = backend.get();
  const RunResult result = image ? run_on_image(model, *image, ro).result
                                 : model.run(text, args.get_or("--target", ""), ro);
  for (const auto& w : output_warnings(result)) std::cerr << "warning: " << w << "\n";

  // Default family: the catalogue's first (production order), or the first of the requested stack.
  const auto families = ui::attentionFamilies(result.trace);
  const std::string stack = args.get_or("--stack", "");
  const std::string kind = args.get_or("--kind", "");
  const ui::AttentionFamily* chosen = nullptr;
  for (const auto& f : families)
    if ((stack.empty() || f.stack.toStdString() == stack) && (kind.empty() || f.kind.toStdString() == kind)) {
      chosen = &f;
      break;
    }
  const bool needsAttention = fig.view == "heatmap" || fig.view == "model" || fig.view == "tokens";
  if (needsAttention && !chosen) {
    std::string have;
    for (const auto& f : families) have += (have.empty() ? "" : ", ") + f.stack.toStdString() + "/" + f.kind.toStdString();
    throw AtlasError("this model records no " + (stack.empty() ? std::string("") : stack + " ") +
                     (kind.empty() ? std::string("") : kind + " ") + "attention (it has: " +
                     (have.empty() ? "none" : have) + ")");
  }
  if (chosen) {
    const std::string label = chosen->label().toStdString();
    fig.selection.stack = chosen->stack;
    fig.selection.kind = chosen->kind;
    if (args.has("--step")) {
      if (!chosen->steps)
        throw AtlasError("--step is for Universal Transformer models; the " + label + " has layers (use --layer)");
      if (args.has("--layer")) throw AtlasError("give --layer or --step, not both (--step N is --layer N-1)");
      fig.selection.layer = static_cast<int>(args.get_int("--step", 1, 1, chosen->layers)) - 1;
    } else {
      // Rollout multiplies layers 0..L: without --layer, through the last layer (the whole model).
      const bool rollout = args.get_or("--head", "") == "rollout";
      fig.selection.layer = static_cast<int>(
          args.get_int("--layer", rollout ? chosen->layers - 1 : 0, 0, chosen->layers - 1));
    }
    if (args.has("--segment")) {
      if (chosen->segments == 0)
        throw AtlasError("--segment is for Transformer-XL models; the " + label + " has no segments");
      const long long segment = args.get_int("--segment", 0, 0, 1LL << 30);
      if (segment >= chosen->segments)
        throw AtlasError("--segment " + std::to_string(segment) + " does not exist: this run has " +
                         std::to_string(chosen->segments) + " segments of " + label + " (0 to " +
                         std::to_string(chosen->segments - 1) + "; one per xl.segment_length tokens)");
      fig.selection.segment = static_cast<int>(segment);
    }
    fig.selection.head = parseHead(args.get_or("--head", "0"));
    if (fig.selection.head >= chosen->heads)
      throw AtlasError("--head " + std::to_string(fig.selection.head) + " does not exist: the model has " +
                       std::to_string(chosen->heads) + " heads (0 to " + std::to_string(chosen->heads - 1) + ")");
    if (query >= 0) {
      const AttentionMap* map = ui::findAttentionMap(result.trace, fig.selection);
      const long long rows = map ? static_cast<long long>(map->queries.count) : 0;
      if (query >= rows)
        throw AtlasError("--query " + std::to_string(query) + " does not exist: the " + label + " has " +
                         std::to_string(rows) + " queries (0 to " + std::to_string(rows - 1) +
                         ", or -1 for all)");
    }
  }
  if (query >= 0 && fig.view != "tokens")
    throw AtlasError("--query picks the query whose lines the tokens view draws; the " +
                     fig.view.toStdString() + " view has no use for it");
  fig.query = static_cast<int>(query);
  ui::exportFigure(fig, result.trace, QString::fromStdString(out));
  std::cerr << "wrote " << out << "\n";
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
