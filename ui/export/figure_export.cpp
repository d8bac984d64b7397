#include "ui/export/figure_export.h"

#include <QBuffer>
#include <QDir>
#include <QFileInfo>
#include <QImage>
#include <QPageSize>
#include <QPainter>
#include <QPdfWriter>
#include <QTextStream>
#include <algorithm>
#include <cmath>
#include <functional>

#include "core/tensor/error.h"
#include "ui/export/atomic_file_device.h"
#include "ui/views/heatmap_painter.h"
#include "ui/views/model_view.h"
#include "ui/export/svg_writer.h"
#include "core/formats/npy.h"
#include "core/model/attention_on_demand.h"
#include "ui/views/token_view.h"
#include "ui/views/attention_heatmap.h"
#include "ui/views/positional_data.h"

namespace atlas::ui {
namespace {

// Above this many cells a vector figure embeds the cell image instead of one rectangle per
// cell: 65k rectangles is already a multi-megabyte SVG.
constexpr size_t kMaxVectorCells = 65536;

using Figure = FigureContent;

QString csvField(const QString& s) {
  if (!s.contains(',') && !s.contains('"') && !s.contains('\n')) return s;
  QString q = s;
  q.replace('"', "\"\"");
  return '"' + q + '"';
}

QString num(float v) { return QString::number(static_cast<double>(v), 'g', 8); }

HeatmapStyle exportStyle(const ColorMapping& mapping) {
  HeatmapStyle s = HeatmapStyle::light();
  s.mapping = mapping;
  s.fontSize = 9.0;
  return s;
}

QSizeF autoHeatmapSize(int rows, int cols) {
  // About 12 pt per cell up to 9 inches of matrix, plus room for labels and the colour bar.
  const double side = std::clamp(std::max(rows, cols) * 12.0 / 72.0, 3.0, 9.0);
  const double w = side * std::min(1.0, double(cols) / std::max(rows, cols)) + 2.4;
  const double h = side * std::min(1.0, double(rows) / std::max(rows, cols)) + 1.9;
  return {std::max(w, 4.5), std::max(h, 3.5)};
}

Figure heatmapFigure(HeatmapData data, const FigureSpec& spec) {
  Figure f;
  // Titles are user text (--title, token labels in a panel's title): shown as figureText.
  data.title = figureText(spec.title.isEmpty() ? data.title : spec.title);
  f.title = data.title;
  f.sizeInches = spec.sizeInches.isEmpty() ? autoHeatmapSize(data.rows, data.cols) : spec.sizeInches;
  f.data = Tensor({data.rows, data.cols});
  std::copy(data.values.begin(), data.values.end(), f.data.data.begin());
  auto shared = std::make_shared<HeatmapData>(std::move(data));
  const ColorMapping mapping = spec.mapping;
  f.paint = [shared, mapping](QPainter& p, const QRectF& bounds, bool vector) {
    HeatmapStyle style = exportStyle(mapping);
    style.vectorCells = vector && shared->values.size() <= kMaxVectorCells;
    HeatmapRaster raster;
    if (!style.vectorCells) raster.build(*shared, mapping, style.maskColor);
    const HeatmapLayout L = layoutHeatmap(p.device(), bounds, *shared, style, QRectF());
    paintHeatmap(p, L, *shared, style, &raster);
  };
  // Headers carry position and label ("3 a"), so repeated labels stay apart in a spreadsheet;
  // a masked cell is empty, not 0 (0 is a value a head can give an allowed key).
  f.csv = [shared](QTextStream& out) {
    out << csvField(shared->rowAxis + "\\" + shared->colAxis);
    for (int c = 0; c < shared->cols; ++c)
      out << ',' << csvField(QString("%1 %2").arg(c).arg(shared->colLabels.value(c)));
    out << '\n';
    for (int r = 0; r < shared->rows; ++r) {
      out << csvField(QString("%1 %2").arg(r).arg(shared->rowLabels.value(r)));
      for (int c = 0; c < shared->cols; ++c) {
        out << ',';
        if (!shared->masked(r, c)) out << num(shared->at(r, c));
      }
      out << '\n';
    }
  };
  return f;
}

const AttentionFamily& requireFamily(const std::vector<AttentionFamily>& families, const QString& stack,
                                     const QString& kind) {
  if (const AttentionFamily* f = findFamily(families, stack, kind)) return *f;
  QStringList have;
  for (const auto& f : families) have << f.stack + "/" + f.kind;
  throw AtlasError(QString("the trace has no %1 %2 attention (it has: %3)")
                       .arg(stack, kind, have.isEmpty() ? "none" : have.join(", "))
                       .toStdString());
}

Figure modelFigure(const Trace& trace, const FigureSpec& spec) {
  const auto families = attentionFamilies(trace);
  const AttentionFamily& fam = requireFamily(families, spec.selection.stack, spec.selection.kind);
  auto grid = std::make_shared<ModelGridData>(modelGridData(trace, fam, true, spec.selection.segment));
  grid->title = figureText(spec.title.isEmpty() ? grid->title : spec.title);
  Figure f;
  f.title = grid->title;
  const double cols = grid->columnCount(), rows = grid->layers();
  f.sizeInches = spec.sizeInches.isEmpty()
                     ? QSizeF(std::clamp(0.9 * cols + 1.8, 4.0, 14.0), std::clamp(0.9 * rows + 0.8, 2.5, 14.0))
                     : spec.sizeInches;
  // Data: the heads only (aggregates are derived), [layers, heads, Lq, Lk].
  const HeatmapData& first = grid->thumbnails.front();
  f.data = Tensor({fam.layers, fam.heads, first.rows, first.cols});
  const size_t n = first.values.size();
  for (int l = 0; l < fam.layers; ++l)
    for (int h = 0; h < fam.heads; ++h)
      std::copy(grid->at(l, h).values.begin(), grid->at(l, h).values.end(),
                f.data.data.begin() + (static_cast<size_t>(l) * fam.heads + h) * n);
  const ColorMapping mapping = spec.mapping;
  f.paint = [grid, mapping](QPainter& p, const QRectF& bounds, bool vector) {
    HeatmapStyle style = exportStyle(mapping);
    style.vectorCells = vector;
    const auto rasters = buildGridRasters(*grid, style);
    paintModelGrid(p, layoutModelGrid(p.device(), bounds, *grid, style), *grid, style, &rasters);
  };
  f.csv = [grid, fam](QTextStream& out) {
    out << "layer,head,query,key,query_label,key_label,weight\n";
    for (int l = 0; l < fam.layers; ++l)
      for (int h = 0; h < fam.heads; ++h) {
        const HeatmapData& d = grid->at(l, h);
        for (int r = 0; r < d.rows; ++r)
          for (int c = 0; c < d.cols; ++c)
            out << l << ',' << h << ',' << r << ',' << c << ',' << csvField(d.rowLabels.value(r)) << ','
                << csvField(d.colLabels.value(c)) << ',' << (d.masked(r, c) ? QString() : num(d.at(r, c)))
                << '\n';
      }
  };
  return f;
}

Figure tokensFigure(const Trace& trace, const FigureSpec& spec) {
  auto lines = std::make_shared<TokenLinesData>();
  HeatmapData d = attentionHeatmap(trace, spec.selection);
  lines->title = figureText(spec.title.isEmpty() ? d.title : spec.title);
  Figure f = heatmapFigure(d, spec);  // data and CSV are the head's matrix
  lines->heads.push_back(std::move(d));
  lines->headIndex.push_back(spec.selection.head);
  f.title = lines->title;
  const int n = std::max(lines->heads.front().rows, lines->heads.front().cols);
  f.sizeInches = spec.sizeInches.isEmpty() ? QSizeF(4.5, std::clamp(n * 0.2 + 1.0, 3.0, 14.0)) : spec.sizeInches;
  const int query = spec.query;
  const ColorMapping mapping = spec.mapping;
  f.paint = [lines, query, mapping](QPainter& p, const QRectF& bounds, bool) {
    const HeatmapStyle style = exportStyle(mapping);
    paintTokenLines(p, layoutTokenLines(p.device(), bounds, *lines, style), *lines, query, style);
  };
  return f;
}

Figure makeFigure(const FigureSpec& spec, const Trace& trace) {
  if (spec.view == "heatmap") return heatmapFigure(attentionHeatmap(trace, spec.selection), spec);
  if (spec.view == "model") return modelFigure(trace, spec);
  if (spec.view == "tokens") return tokensFigure(trace, spec);
  FigureSpec s = spec;
  s.mapping.colormap = spec.mapping.colormap == Colormap::Viridis ? Colormap::Diverging : spec.mapping.colormap;
  if (spec.view == "positional") return heatmapFigure(positionalHeatmap(trace), s);
  if (spec.view == "similarity") return heatmapFigure(positionalSimilarity(trace), s);
  throw AtlasError("unknown view '" + spec.view.toStdString() + "'; expected one of " +
                   figureViews().join(", ").toStdString());
}

void requirePainter(QPainter& p, const QString& path) {
  if (!p.isActive()) throw AtlasError(path.toStdString() + ": cannot start drawing the figure");
}

}  // namespace

QStringList figureViews() { return {"heatmap", "model", "positional", "similarity", "tokens"}; }
QStringList figureFormats() { return {"svg", "pdf", "png", "npy", "csv"}; }

QSizeF figureSizeInches(const FigureSpec& spec, const Trace& trace) {
  return makeFigure(spec, trace).sizeInches;
}

FigureContent heatmapFigureContent(HeatmapData data, const FigureSpec& spec) {
  return heatmapFigure(std::move(data), spec);
}

void exportFigure(const FigureSpec& spec, const Trace& trace, const QString& path) {
  const QString ext = QFileInfo(path).suffix().toLower();
  if (!figureFormats().contains(ext))
    throw AtlasError("cannot tell the format of '" + path.toStdString() + "': use a file name ending in ." +
                     figureFormats().join(", .").toStdString());
  if (spec.dpi < 10 || spec.dpi > 2400)
    throw AtlasError("--dpi " + std::to_string(spec.dpi) + " is out of range (10 to 2400)");
  if (ext == "npy" && writeExactHeatmapNpy(spec, trace, path)) return;
  writeFigure(makeFigure(spec, trace), spec.dpi, path);
}

bool writeExactHeatmapNpy(const FigureSpec& spec, const Trace& trace, const QString& path) {
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, ".npy '<f4' data is written as the host's floats");
  if (spec.view != "heatmap") return false;
  const AttentionMap* map = findAttentionMap(trace, spec.selection);
  const int head = spec.selection.head;
  if (!map || !(head >= 0 || head == HeadMean || head == HeadMax) || !heatmapIsOverview(*map, head)) return false;
  const OnDemandMap weights(trace, *map);
  if (head >= weights.heads())
    throw AtlasError(map->array + " has " + std::to_string(weights.heads()) + " heads, not head " + std::to_string(head));
  const int64_t selector = head >= 0 ? head : head == HeadMean ? OnDemandMap::kMeanOfHeads : OnDemandMap::kMaxOfHeads;
  const std::vector<uint8_t> header = npy_header({weights.queries(), weights.keys()}, DType::F32);
  writeFileAtomically(path, [&](AtomicFileDevice& out) {
    out.write(reinterpret_cast<const char*>(header.data()), static_cast<qint64>(header.size()));
    constexpr int64_t kRowsPerWrite = 256;  // 16 MB of weights at 16k keys
    for (int64_t r0 = 0; r0 < weights.queries() && !out.failed(); r0 += kRowsPerWrite) {
      const std::vector<float> rows = weights.rows(selector, r0, std::min(weights.queries(), r0 + kRowsPerWrite));
      out.write(reinterpret_cast<const char*>(rows.data()), static_cast<qint64>(rows.size() * sizeof(float)));
    }
  });
  return true;
}

FigureContent figureContent(const FigureSpec& spec, const Trace& trace) { return makeFigure(spec, trace); }

QImage figureImage(const FigureContent& fig, int dpi) {
  const QSize px(static_cast<int>(std::lround(fig.sizeInches.width() * dpi)),
                 static_cast<int>(std::lround(fig.sizeInches.height() * dpi)));
  if (static_cast<double>(px.width()) * px.height() > 400e6)
    throw AtlasError("a " + std::to_string(px.width()) + "x" + std::to_string(px.height()) +
                     " PNG is too large; lower --dpi");
  QImage img(px, QImage::Format_ARGB32_Premultiplied);
  if (img.isNull())
    throw AtlasError("not enough memory for a " + std::to_string(px.width()) + "x" + std::to_string(px.height()) +
                     " image");
  const int dpm = static_cast<int>(std::lround(dpi / 0.0254));
  img.setDotsPerMeterX(dpm);  // so the PNG records its DPI and fonts resolve in points
  img.setDotsPerMeterY(dpm);
  img.fill(Qt::white);
  QPainter p(&img);
  requirePainter(p, "the image");
  p.setRenderHint(QPainter::Antialiasing, true);
  p.setRenderHint(QPainter::TextAntialiasing, true);
  p.scale(dpi / 72.0, dpi / 72.0);
  fig.paint(p, QRectF(0, 0, fig.sizeInches.width() * 72.0, fig.sizeInches.height() * 72.0), false);
  return img;
}

QByteArray figureSvg(const FigureContent& fig) {
  const QRectF page(0, 0, fig.sizeInches.width() * 72.0, fig.sizeInches.height() * 72.0);
  return renderSvg(page, fig.title, "Attention Atlas figure", [&](QPainter& p) { fig.paint(p, page, true); },
                   "the SVG");
}

void writeFigure(const FigureContent& fig, int dpi, const QString& path) {
  const QString ext = QFileInfo(path).suffix().toLower();
  if (!figureFormats().contains(ext))
    throw AtlasError("cannot tell the format of '" + path.toStdString() + "': use a file name ending in ." +
                     figureFormats().join(", .").toStdString());
  if (dpi < 10 || dpi > 2400) throw AtlasError("--dpi " + std::to_string(dpi) + " is out of range (10 to 2400)");
  const double wPt = fig.sizeInches.width() * 72.0, hPt = fig.sizeInches.height() * 72.0;
  const QRectF bounds(0, 0, wPt, hPt);

  // Every format goes through a temporary file renamed over `path` when complete
  // (ui/export/atomic_file_device.h): a failed export never leaves a truncated file or loses the old one.
  if (ext == "npy") {
    std::vector<uint8_t> bytes;
    try {
      bytes = encode_npy(fig.data, DType::F32);
    } catch (const AtlasError& e) {
      throw AtlasError("cannot write '" + path.toStdString() + "': " + e.what());
    }
    writeFileAtomically(path, [&](AtomicFileDevice& out) {
      out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<qint64>(bytes.size()));
    });
    return;
  }
  if (ext == "csv") {
    writeFileAtomically(path, [&](AtomicFileDevice& device) {
      QTextStream out(&device);
      fig.csv(out);
      out.flush();
    });
    return;
  }
  if (ext == "png") {
    QImage img;
    try {
      img = figureImage(fig, dpi);
    } catch (const AtlasError& e) {
      throw AtlasError("cannot write '" + path.toStdString() + "': " + e.what());
    }
    // Encoded in memory first: a write that fails (a full disk, ulimit -f) is then reported once,
    // by commit() with its reason, and libpng prints no "Write Error" line of its own.
    QByteArray png;
    QBuffer buffer(&png);
    buffer.open(QIODevice::WriteOnly);
    if (!img.save(&buffer, "PNG")) throw AtlasError(path.toStdString() + ": the PNG encoder failed");
    writeFileAtomically(path, [&](AtomicFileDevice& out) { out.write(png); });
    return;
  }
  if (ext == "svg") {
    // Drawn whole first: the text is escaped and the XML checked before anything is written.
    const QByteArray svg = renderSvg(bounds, fig.title, "Attention Atlas figure",
                                     [&](QPainter& p) { fig.paint(p, bounds, true); }, path.toStdString());
    writeFileAtomically(path, [&](AtomicFileDevice& out) { out.write(svg); });
    return;
  }
  // PDF: 72 dpi so one device unit is one point; vector output with embedded font subsets.
  writeFileAtomically(path, [&](AtomicFileDevice& out) {
    QPdfWriter pdf(&out);
    pdf.setResolution(72);
    pdf.setPageSize(QPageSize(QSizeF(wPt, hPt), QPageSize::Point, QString(), QPageSize::ExactMatch));
    pdf.setPageMargins(QMarginsF(0, 0, 0, 0));
    pdf.setTitle(fig.title);
    pdf.setCreator("Attention Atlas");
    QPainter p(&pdf);
    requirePainter(p, path);
    fig.paint(p, bounds, true);
    p.end();  // writes the trailer, before the file is committed
  });
}

QStringList exportAllHeads(const FigureSpec& base, const Trace& trace, const QString& dir,
                           const QString& format) {
  if (!figureFormats().contains(format))
    throw AtlasError("unknown format '" + format.toStdString() + "'; expected one of " +
                     figureFormats().join(", ").toStdString());
  if (!QDir().mkpath(dir)) throw AtlasError("cannot create folder '" + dir.toStdString() + "'");
  QStringList written;
  for (const AttentionFamily& fam : attentionFamilies(trace))
    for (int seg = 0; seg < std::max(1, fam.segments); ++seg)
      for (int l = 0; l < fam.layers; ++l) {
        const AttentionMap* map = findAttentionMap(trace, {fam.stack, fam.kind, l, 0, seg});
        if (!map) continue;  // e.g. a step that no position reached
        for (int h = 0; h < static_cast<int>(map->heads); ++h) {
          FigureSpec s = base;
          s.view = "heatmap";
          s.selection = {fam.stack, fam.kind, l, h, seg};
          s.title.clear();
          // The trace array's own name: "decoder.seg1.layer0.self_attn.head0.png".
          const QString path = QDir(dir).filePath(
              QString("%1.head%2.%3").arg(QString::fromStdString(map->array)).arg(h).arg(format));
          exportFigure(s, trace, path);
          written << path;
        }
      }
  return written;
}

}  // namespace atlas::ui
