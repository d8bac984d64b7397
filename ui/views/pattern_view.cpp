#include "ui/views/pattern_view.h"

#include <QFormLayout>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QSpinBox>
#include <QTabWidget>
#include <QToolButton>
#include <QVBoxLayout>

#include "core/tensor/error.h"
#include "ui/export/figure_export.h"
#include "ui/export/export_dialog.h"
#include "ui/views/heatmap_view.h"
#include "ui/views/attention_heatmap.h"
#include "ui/views/attention_selection.h"
#include "ui/views/heatmap_data.h"
#include "ui/views/value_mapper.h"

namespace atlas::ui {

namespace {
QSpinBox* tip_spin(int lo, int hi, const QString& tip) {
  auto* s = new QSpinBox;
  s->setRange(lo, hi);
  s->setToolTip(tip);
  s->setKeyboardTracking(false);  // one rebuild per entered number, not per digit
  return s;
}
}  // namespace

PatternView::PatternView(QWidget* parent) : QWidget(parent) {
  setObjectName("patternView");
  m_length = tip_spin(1, 1 << 24, "Sequence length of the pattern (sparse patterns need no run of that length)");
  m_zoom = tip_spin(0, 1 << 24, "Cells per pixel side (0 = fit the whole pattern)");
  m_zoom->setSpecialValueText("fit");
  m_row0 = tip_spin(0, 1 << 24, "First query row of the window");
  m_col0 = tip_spin(0, 1 << 24, "First key column of the window");
  m_pixel = tip_spin(0, 1 << 24, "Query pixel (raster position) of the image overlay");
  m_windowControls = new QWidget;
  // Two rows: four spin boxes that hold up to 2^24 side by side would make the dock (and with
  // it the window) wider than a 1280-pixel screen. Shown only for patterns of the config.
  auto* wl = new QGridLayout(m_windowControls);
  wl->setContentsMargins(0, 0, 0, 0);
  int field = 0;
  for (auto [label, w] : {std::pair<const char*, QSpinBox*>{"Length", m_length}, {"Zoom", m_zoom}, {"Row", m_row0}, {"Column", m_col0}}) {
    auto* l = new QLabel(label);
    wl->addWidget(l, field / 2, (field % 2) * 2);
    wl->addWidget(w, field / 2, (field % 2) * 2 + 1);
    m_windowFields.push_back(l);
    m_windowFields.push_back(w);
    ++field;
  }
  wl->setColumnStretch(4, 1);
  m_export = new QToolButton;
  m_export->setText("Export\u2026");
  wl->addWidget(m_export, 0, 5);
  for (QWidget* f : m_windowFields) f->setVisible(false);  // until a model with a config pattern
  m_stats = new QLabel;
  m_stats->setWordWrap(true);
  m_stats->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_matrix = new HeatmapView;
  m_image = new HeatmapView;
  auto* imagePage = new QWidget;
  auto* il = new QVBoxLayout(imagePage);
  il->setContentsMargins(0, 0, 0, 0);
  auto* pf = new QFormLayout;
  pf->addRow("Query pixel:", m_pixel);
  il->addLayout(pf);
  il->addWidget(m_image, 1);
  m_tabs = new QTabWidget;
  m_tabs->setDocumentMode(true);
  m_tabs->addTab(m_matrix, "Mask");
  m_tabs->addTab(imagePage, "Image overlay");
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(2, 2, 2, 2);
  v->addWidget(m_windowControls);
  v->addWidget(m_stats);
  v->addWidget(m_tabs, 1);
  for (QSpinBox* s : {m_length, m_zoom, m_row0, m_col0, m_pixel})
    connect(s, &QSpinBox::valueChanged, this, [this] {
      if (m_updating) return;
      m_dirty = true;
      if (isVisible()) rebuild();
    });
  connect(m_export, &QToolButton::clicked, this, &PatternView::exportDialog);
  connect(m_matrix, &HeatmapView::rowPinned, this, [this](int row) {
    if (row < 0) return;
    // A tile row covers `zoom` queries: pick its first.
    const int64_t z = std::max<int64_t>(1, m_pattern.zoom);
    const int64_t r0 = m_model && hasConfigPattern(m_model->config()) ? m_row0->value() / z : 0;
    const int q = static_cast<int>((r0 + row) * z);
    setQueryPixel(q);
    emit queryPicked(q);
  });
}

bool PatternView::causal() const {
  return m_model && m_model->config().architecture == Architecture::Decoder && m_sel.kind != "cross_attn";
}

bool PatternView::isImageModel() const { return m_model && imageWidth(m_model->config()) > 0; }

void PatternView::setRun(std::shared_ptr<const Model> model, std::shared_ptr<const Trace> trace) {
  const bool newModel = model != m_model;
  m_model = std::move(model);
  m_trace = std::move(trace);
  const bool config = m_model && hasConfigPattern(m_model->config());
  m_windowControls->setEnabled(true);
  for (QWidget* f : m_windowFields) f->setVisible(config);
  if (config && (newModel || m_length->value() <= 1) && m_trace) {
    const QSignalBlocker b(m_length);
    m_length->setValue(static_cast<int>(std::max<size_t>(1, m_trace->source_tokens.size())));
  }
  m_tabs->setTabEnabled(1, isImageModel());
  m_dirty = true;
  if (isVisible()) rebuild();
}

void PatternView::setSelection(const AttentionSelection& sel) {
  m_sel = sel;
  m_dirty = true;
  if (isVisible()) rebuild();
}

void PatternView::setStyle(const HeatmapStyle& style) {
  HeatmapStyle s = style;
  s.mapping.normalization = Normalization::Global;
  s.mapping.scale = ColorScale::Linear;
  m_matrix->setStyle(s);
  m_image->setStyle(style);
}

void PatternView::setWindow(int64_t length, int64_t r0, int64_t c0, int64_t zoom) {
  m_updating = true;
  m_length->setValue(static_cast<int>(length));
  m_row0->setValue(static_cast<int>(r0));
  m_col0->setValue(static_cast<int>(c0));
  m_zoom->setValue(static_cast<int>(zoom));
  m_updating = false;
  m_dirty = true;
  if (isVisible()) rebuild();
}

void PatternView::setQueryPixel(int query) {
  m_pixel->setValue(query);  // rebuilds through valueChanged
}

void PatternView::showEvent(QShowEvent*) {
  if (m_dirty) rebuild();
}

void PatternView::ensureBuilt() {
  if (m_dirty) rebuild();
}

QString PatternView::statsText() const {
  const PatternSummary& s = m_pattern.stats;
  return QString("%1 \u00B7 %2 queries \u00D7 %3 keys \u00B7 nonzeros %4 \u00B7 density %5 \u00B7 keys per query min %6, mean %7, max %8")
      .arg(s.source).arg(s.length).arg(s.keys).arg(s.nnz).arg(s.density, 0, 'g', 4).arg(s.minRow)
      .arg(s.meanRow, 0, 'f', 2).arg(s.maxRow);
}

void PatternView::rebuild() {
  m_dirty = false;
  m_pattern = {};
  if (!m_model || !m_trace) return;
  try {
    const int head = std::max(0, m_sel.head);
    if (hasConfigPattern(m_model->config())) {
      PatternWindow w;
      w.length = m_length->value();
      w.r0 = m_row0->value();
      w.c0 = m_col0->value();
      w.zoom = m_zoom->value();
      m_pattern = configPattern(m_model->config(), w, m_sel.layer, head, causal());
    } else {
      m_pattern = tracePattern(*m_trace, m_sel);
    }
    m_matrix->setData(m_pattern.tile);
    m_stats->setText(statsText());
    if (isImageModel()) {
      AttentionSelection one = m_sel;
      one.head = head;
      const HeatmapData attention = attentionHeatmap(*m_trace, one);
      const int q = std::min(m_pixel->value(), attention.rows - 1);
      const auto allowed = configAllowedRow(m_model->config(), attention.cols, m_sel.layer, head, causal(), q);
      m_image->setData(pixelOverlay(attention, allowed, imageWidth(m_model->config()), q));
    }
  } catch (const std::exception& e) {
    m_matrix->setData({});
    m_stats->setText(QString::fromStdString(e.what()));
  }
}

void PatternView::exportCurrent(const QString& path, int dpi) const {
  const HeatmapData& d = m_tabs->currentIndex() == 1 ? m_image->data() : m_matrix->data();
  if (d.empty()) throw AtlasError("the pattern view has nothing to export");
  FigureSpec spec;
  spec.dpi = dpi;
  writeFigure(heatmapFigureContent(d, spec), dpi, path);
}

void PatternView::exportDialog() {
  runExportDialog(this, "Export pattern", "pattern.svg",
                  [this](const QString& path, int dpi) { exportCurrent(path, dpi); });
}

}  // namespace atlas::ui
