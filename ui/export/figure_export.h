#pragma once
// Publication figures of the views, written headless (needs a QGuiApplication, no display):
// SVG (QSvgGenerator) and PDF (QPdfWriter) as vector graphics with embedded fonts (PDF),
// PNG at a chosen DPI, and the view's data as .npy or .csv. Figures are drawn by the same
// painter functions as the on-screen widgets (paintHeatmap, paintModelGrid, paintTokenLines).
#include <QRectF>
#include <QSizeF>
#include <QString>
#include <QStringList>
#include <functional>

class QImage;
class QPainter;
class QTextStream;

#include "ui/views/attention_selection.h"
#include "ui/views/heatmap_data.h"
#include "ui/views/value_mapper.h"

namespace atlas::ui {

struct FigureSpec {
  // "heatmap" (one layer/head or aggregate), "model" (layers x heads grid), "positional"
  // (P as a heatmap), "similarity" (P P^T), "tokens" (BertViz-style lines of one head).
  QString view = "heatmap";
  AttentionSelection selection;  // heatmap, tokens: all fields; model: stack, kind and segment
  ColorMapping mapping;
  int dpi = 150;       // PNG only
  QSizeF sizeInches;   // empty = chosen from the data
  QString title;       // empty = the view's own title
  int query = -1;      // tokens: the query whose lines are drawn (-1 = all)
};

QStringList figureViews();         // the accepted values of FigureSpec::view
QStringList figureFormats();       // "svg", "pdf", "png", "npy", "csv"
// The figure size `spec` gives for `trace` (resolving an empty sizeInches).
QSizeF figureSizeInches(const FigureSpec& spec, const Trace& trace);

// Writes `path`, the format taken from its extension. Throws AtlasError (unknown view or
// format, missing array, unwritable file) with a message naming what was wrong.
void exportFigure(const FigureSpec& spec, const Trace& trace, const QString& path);

// A figure assembled by a caller (the variant panels use it for their charts): how to paint
// it into `bounds` (figure units = points; `vector` is true for SVG/PDF), the data .npy writes
// and the CSV writer.
struct FigureContent {
  QString title;
  QSizeF sizeInches;
  std::function<void(QPainter&, const QRectF& bounds, bool vector)> paint;
  Tensor data;
  std::function<void(QTextStream&)> csv;
};
// The figure of a view (what exportFigure writes) to draw or copy elsewhere.
FigureContent figureContent(const FigureSpec& spec, const Trace& trace);
// `fig` as a white-backed image at `dpi` (what the PNG export writes), and as SVG bytes (what
// the SVG export writes): for the clipboard. Throw AtlasError on an absurd size.
QImage figureImage(const FigureContent& fig, int dpi);
QByteArray figureSvg(const FigureContent& fig);
// Writes `fig` to `path` (format from the extension), as exportFigure does.
void writeFigure(const FigureContent& fig, int dpi, const QString& path);
// The .npy of a heatmap that is drawn as an overview (a map computed on request with more than
// kExactHeatmapCells cells, selection a head, the head mean or the head maximum): every weight of
// the selection [Lq, Lk], computed block by block from the traced queries and keys and streamed
// to `path` (never held whole: 1 GB at 16k tokens), the same numbers a run storing its maps
// holds. Returns false, writing nothing, where the heatmap is not such an overview. exportFigure
// and the app's export call it for .npy.
bool writeExactHeatmapNpy(const FigureSpec& spec, const Trace& trace, const QString& path);
// The heatmap figure of any matrix (title, labels and colour bar from `data`).
FigureContent heatmapFigureContent(HeatmapData data, const FigureSpec& spec);

// Every head of every map of the catalogue (every layer or step, and segment), one file each,
// named after the trace array, "<array>.head<h>.<format>" (e.g. encoder.layer1.attn.head0.png,
// decoder.seg1.layer0.self_attn.head0.png), in `dir` (created if needed). Returns the paths.
QStringList exportAllHeads(const FigureSpec& base, const Trace& trace, const QString& dir,
                           const QString& format);

}  // namespace atlas::ui
