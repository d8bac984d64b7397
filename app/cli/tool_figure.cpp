// The analysis verbs' --figure (tool_figure.h).
#include "app/cli/tool_figure.h"

#include <cstdio>
#include <filesystem>

#include "app/cli/output_file.h"
#include "core/tensor/error.h"

#if defined(ATLAS_HAVE_UI)
#include <QString>

#include "app/cli/headless_qt.h"
#include "app/cli/panel_export.h"
#include "ui/export/figure_export.h"
#include "ui/panels/panel_chart.h"
#endif

namespace atlas::cli {

const char* const kToolFigureUsage =
    "  Figure:\n"
    "    --figure F     also draws the result as the app's panel does: .svg, .pdf or .png\n"
    "    --plot P       which of the panel's plots --figure draws: its number or a part of its\n"
    "                   name (default the first)\n";

void check_tool_figure_args(const Args& args) {
  const auto figure = args.get("--figure");
  if (!figure) {
    if (args.has("--plot")) throw AtlasError("--plot picks the plot --figure draws; give --figure FILE too");
    return;
  }
#if defined(ATLAS_HAVE_UI)
  check_output_file("--figure", *figure);
  const std::filesystem::path folder = std::filesystem::path(*figure).parent_path();
  if (!folder.empty() && !std::filesystem::is_directory(folder))
    throw AtlasError("--figure " + printable(*figure, 200) + ": the folder " + printable(folder.string(), 200) +
                     " does not exist");
  const std::string ext = lowercase_extension(*figure);
  if (ext != "svg" && ext != "pdf" && ext != "png")
    throw AtlasError("--figure '" + printable(*figure, 200) + "': use a file name ending in .svg, .pdf or .png "
                     "(the data is written by --out / --csv)");
#else
  throw AtlasError("this atlas was built without the Qt UI (ATLAS_GUI=OFF), which draws the figures; "
                   "rebuild with -DATLAS_GUI=ON to use --figure");
#endif
}

#if defined(ATLAS_HAVE_UI)
void write_tool_figure(const Args& args, const std::function<std::vector<ui::PanelPlot>()>& plots,
                       const std::string& panel) {
  const auto figure = args.get("--figure");
  if (!figure) return;
  auto app = make_headless_app();
  const std::vector<ui::PanelPlot> all = plots();
  const ui::PanelPlot& plot = all[choose_plot(all, args.get_or("--plot", ""), panel)];
  const ui::FigureSpec spec;
  ui::writeFigure(ui::panelFigure(plot, spec), spec.dpi, QString::fromStdString(*figure));
  std::fprintf(stderr, "wrote %s (%s)\n", figure->c_str(), plot.name.toUtf8().constData());
}
#endif

}  // namespace atlas::cli
