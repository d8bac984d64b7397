// Drawing and export of the NTM figure (see ntm_figure.h).
#include "ui/panels/ntm/ntm_figure.h"

#include <QFileInfo>
#include <QPainter>
#include <algorithm>
#include <cmath>

#include "ui/export/painted_figure.h"
#include "ui/views/colormap.h"
#include "core/tensor/error.h"
#include "core/formats/npy.h"

namespace atlas::ui {

namespace {

constexpr double kWidthIn = 10.0, kHeightIn = 6.5;

struct Ink {
  QColor fg, bg, bar, grid;
};

Ink inkFor(bool dark) {
  if (dark) return {QColor(230, 230, 230), QColor(30, 30, 30), QColor(110, 170, 240), QColor(80, 80, 80)};
  return {Qt::black, Qt::white, QColor(40, 100, 190), QColor(210, 210, 210)};
}

// Bars of weights in [0, 1] over slots 0..N-1, y axis fixed to [0, 1] so stages compare.
void paintBars(QPainter& p, const QRectF& r, const RowVec& w, const QString& title, const Ink& ink) {
  QFont f = p.font();
  f.setPointSizeF(8.0);
  p.setFont(f);
  const QRectF plot = r.adjusted(22, 16, -4, -14);
  p.setPen(ink.fg);
  p.drawText(QRectF(r.left(), r.top(), r.width(), 14), Qt::AlignCenter, title);
  p.setPen(ink.grid);
  for (double y : {0.0, 0.5, 1.0}) {
    const double py = plot.bottom() - y * plot.height();
    p.drawLine(QPointF(plot.left(), py), QPointF(plot.right(), py));
    p.setPen(ink.fg);
    p.drawText(QRectF(r.left(), py - 6, 20, 12), Qt::AlignRight | Qt::AlignVCenter, QString::number(y));
    p.setPen(ink.grid);
  }
  const int n = static_cast<int>(w.size());
  const double bw = plot.width() / std::max(1, n);
  for (int i = 0; i < n; ++i) {
    const double v = std::clamp(double(w[i]), 0.0, 1.0);
    p.fillRect(QRectF(plot.left() + i * bw + bw * 0.1, plot.bottom() - v * plot.height(), bw * 0.8,
                      v * plot.height()),
               ink.bar);
    if (n <= 16 || i % 4 == 0) {
      p.setPen(ink.fg);
      p.drawText(QRectF(plot.left() + i * bw, plot.bottom() + 1, bw, 12), Qt::AlignCenter, QString::number(i));
    }
  }
}

// A matrix as coloured cells; `diverging` maps [-m, m] (memory), else [0, 1] (weights).
void paintMatrix(QPainter& p, const QRectF& r, const Mat& m, const QString& title, bool diverging,
                 const Ink& ink, const QString& rowsLabel, const QString& colsLabel) {
  QFont f = p.font();
  f.setPointSizeF(8.0);
  p.setFont(f);
  p.setPen(ink.fg);
  p.drawText(QRectF(r.left(), r.top(), r.width(), 14), Qt::AlignCenter, title);
  const QRectF plot = r.adjusted(14, 16, -4, -14);
  p.drawText(QRectF(r.left(), plot.bottom() + 1, r.width(), 12), Qt::AlignCenter, colsLabel);
  p.save();
  p.translate(r.left() + 6, plot.center().y());
  p.rotate(-90);
  p.drawText(QRectF(-plot.height() / 2, -6, plot.height(), 12), Qt::AlignCenter, rowsLabel);
  p.restore();
  const ColorLut lut(diverging ? Colormap::Diverging : Colormap::Viridis);
  const float scale = diverging ? std::max(1e-6f, m.cwiseAbs().maxCoeff()) : 1.0f;
  const double cw = plot.width() / std::max<int64_t>(1, m.cols()), ch = plot.height() / std::max<int64_t>(1, m.rows());
  for (int64_t i = 0; i < m.rows(); ++i)
    for (int64_t j = 0; j < m.cols(); ++j) {
      const float t = diverging ? 0.5f + 0.5f * m(i, j) / scale : m(i, j);
      p.fillRect(QRectF(plot.left() + j * cw, plot.top() + i * ch, cw + 0.02, ch + 0.02), lut.color(t));
    }
  p.setPen(ink.grid);
  p.drawRect(plot);
}

Mat headWeightsOverTime(const NtmRun& run, size_t head) {
  Mat w(static_cast<int64_t>(run.steps.size()), run.memory[0].rows());
  for (size_t t = 0; t < run.steps.size(); ++t) w.row(int64_t(t)) = run.steps[t].addressing[head].sharpened;
  return w;
}

}  // namespace

void paintNtmFigure(QPainter& p, const QRectF& rect, const NtmRun& run, NtmFigureSelection sel, bool dark) {
  const Ink ink = inkFor(dark);
  p.fillRect(rect, ink.bg);
  if (run.steps.empty() || run.heads.empty()) return;
  const int step = std::clamp(sel.step, 0, int(run.steps.size()) - 1);
  const int head = std::clamp(sel.head, 0, int(run.heads.size()) - 1);
  const NtmAddressing& a = run.steps[size_t(step)].addressing[size_t(head)];
  const QString who = QString::fromStdString(run.heads[size_t(head)].name);
  QFont f = p.font();
  f.setPointSizeF(10.0);
  p.setFont(f);
  p.setPen(ink.fg);
  p.drawText(QRectF(rect.left(), rect.top(), rect.width(), 18), Qt::AlignCenter,
             QString("Neural Turing Machine addressing: step %1, head %2").arg(step).arg(who));
  const double top = rect.top() + 20, h = (rect.height() - 20) / 2, w = rect.width() / 4;
  const RowVec* stages[] = {&a.content, &a.gated, &a.shifted, &a.sharpened};
  const char* names[] = {"content w_c", "gated w_g", "shifted w~", "sharpened w"};
  for (int i = 0; i < 4; ++i)
    paintBars(p, QRectF(rect.left() + i * w, top, w, h - 4), *stages[i], names[i], ink);
  const int cols = 2 + int(run.heads.size());
  const double bw = rect.width() / cols, by = top + h;
  paintMatrix(p, QRectF(rect.left(), by, bw, h), run.memory[size_t(step)],
              QString("memory before step %1").arg(step), true, ink, "slot", "width");
  paintMatrix(p, QRectF(rect.left() + bw, by, bw, h), run.memory[size_t(step) + 1],
              QString("memory after step %1").arg(step), true, ink, "slot", "width");
  for (size_t hd = 0; hd < run.heads.size(); ++hd)
    paintMatrix(p, QRectF(rect.left() + (2 + int(hd)) * bw, by, bw, h), headWeightsOverTime(run, hd),
                QString::fromStdString(run.heads[hd].name) + " weights over time", false, ink, "step", "slot");
}

void exportNtmFigure(const NtmRun& run, NtmFigureSelection sel, const QString& path) {
  const QString ext = QFileInfo(path).suffix().toLower();
  if (run.steps.empty()) throw AtlasError("the NTM run has no steps to export");
  if (ext == "npy") {
    const int step = std::clamp(sel.step, 0, int(run.steps.size()) - 1);
    const int head = std::clamp(sel.head, 0, int(run.heads.size()) - 1);
    const NtmAddressing& a = run.steps[size_t(step)].addressing[size_t(head)];
    const int64_t n = a.content.size();
    Tensor t({4, n});
    const RowVec* stages[] = {&a.content, &a.gated, &a.shifted, &a.sharpened};
    for (int s = 0; s < 4; ++s) std::copy(stages[s]->data(), stages[s]->data() + n, t.data.begin() + s * n);
    write_npy(path.toStdString(), t, DType::F32);
    return;
  }
  const QRectF page(0, 0, kWidthIn * 72, kHeightIn * 72);  // points
  writePaintedFigure(path, ext, page, "Neural Turing Machine addressing",
                     [&](QPainter& p) { paintNtmFigure(p, page, run, sel); });
}

}  // namespace atlas::ui
