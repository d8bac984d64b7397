// The score-function grid (score_panel.h).
#include "ui/tools/score_panel.h"

#include <QGridLayout>
#include <QLabel>
#include <QPainter>
#include <QScrollArea>
#include <QTextStream>
#include <QToolButton>
#include <QVBoxLayout>

#include "core/model/attention_map.h"
#include "core/tensor/error.h"
#include "ui/export/export_dialog.h"
#include "ui/views/heatmap_view.h"
#include "ui/panels/variant_plots.h"

namespace atlas::ui {

namespace {

constexpr int kColumns = 3;

QStringList labelsOf(const std::vector<TokenInfo>& tokens) {
  QStringList out;
  for (const auto& t : tokens) out << displayLabel(t.label);
  return out;
}

// The keys as the attention-map catalogue describes the compared map (the source tokens for
// cross-attention and recurrent alignments, memory + segment for XL, ...).
QStringList keyLabels(const ScoreComparison& c, const Trace& trace) {
  if (const AttentionMap* map = trace.attention_map(c.attention)) {
    const std::vector<std::string> keys = key_labels(trace, *map);
    if (static_cast<int64_t>(keys.size()) == c.lk) {
      QStringList out;
      for (const auto& k : keys) out << displayLabel(k);
      return out;
    }
  }
  return indexLabels("k", static_cast<int>(c.lk));
}

HeatmapData entryHeatmap(const ScoreComparison& c, const ScoreComparison::Entry& e,
                         const QStringList& rows, const QStringList& cols) {
  HeatmapData d;
  d.rows = static_cast<int>(e.probs.rows());
  d.cols = static_cast<int>(e.probs.cols());
  d.values.resize(static_cast<size_t>(d.rows) * d.cols);
  d.mask.resize(d.values.size());
  for (int i = 0; i < d.rows; ++i)
    for (int j = 0; j < d.cols; ++j) {
      const size_t at = static_cast<size_t>(i) * d.cols + j;
      d.values[at] = e.probs(i, j);
      d.mask[at] = std::isinf(e.scores(i, j)) && e.scores(i, j) < 0 ? 0 : 1;
    }
  d.rowLabels = rows.size() == d.rows ? rows : indexLabels("q", d.rows);
  d.colLabels = cols.size() == d.cols ? cols : indexLabels("k", d.cols);
  d.title = QString("%1: %2 head %3")
                .arg(score_function_name(e.function), QString::fromStdString(c.attention))
                .arg(c.head);
  d.rowAxis = "query";
  d.colAxis = "key";
  return d;
}

}  // namespace

ScorePanel::ScorePanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* top = new QHBoxLayout;
  m_status = new QLabel;
  m_status->setWordWrap(true);
  m_export = new QToolButton;
  m_export->setText("Export…");
  m_export->setToolTip("Export the grid as SVG/PDF/PNG, or its data as .npy/.csv");
  top->addWidget(m_status, 1);
  top->addWidget(m_export);
  layout->addLayout(top);
  // The grid scrolls when the dock is shorter than its views' minimum: squeezed, the layout
  // would lay each caption over the heatmap above it.
  auto* gridHolder = new QWidget;
  auto* grid = new QGridLayout(gridHolder);
  grid->setContentsMargins(0, 0, 0, 0);
  const auto& fns = all_score_functions();
  for (size_t i = 0; i < fns.size(); ++i) {
    auto* caption = new QLabel(score_function_name(fns[i]));
    caption->setWordWrap(true);
    auto* view = new HeatmapView;
    view->setMinimumSize(160, 140);
    const int r = static_cast<int>(i) / kColumns * 2, c = static_cast<int>(i) % kColumns;
    grid->addWidget(caption, r, c);
    grid->addWidget(view, r + 1, c);
    grid->setRowStretch(r + 1, 1);
    m_captions.push_back(caption);
    m_views.push_back(view);
    // The same query in every function: a pinned row in one view is pinned in all.
    connect(view, &HeatmapView::rowPinned, this, [this, view](int row) {
      for (HeatmapView* other : m_views)
        if (other != view && other->pinnedRow() != row) other->setPinnedRow(row);
    });
  }
  auto* scroll = new QScrollArea;
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setWidgetResizable(true);
  scroll->setWidget(gridHolder);
  layout->addWidget(scroll, 1);
  connect(m_export, &QToolButton::clicked, this, &ScorePanel::exportDialog);
}

void ScorePanel::setRun(std::shared_ptr<const Model> model, std::shared_ptr<const Trace> trace) {
  m_model = std::move(model);
  m_trace = std::move(trace);
  m_dirty = true;
  if (isVisible()) rebuild();
}

void ScorePanel::setSelection(const AttentionSelection& sel) {
  AttentionSelection s = sel;
  s.head = std::max(s.head, 0);
  if (s.stack == m_sel.stack && s.kind == m_sel.kind && s.layer == m_sel.layer && s.head == m_sel.head &&
      s.segment == m_sel.segment)
    return;
  m_sel = s;
  m_dirty = true;
  if (isVisible()) rebuild();
}

void ScorePanel::ensureBuilt() {
  if (m_dirty) rebuild();
}

void ScorePanel::showEvent(QShowEvent*) { ensureBuilt(); }

QString ScorePanel::caption(int index) const { return m_captions.at(static_cast<size_t>(index))->text(); }

void ScorePanel::rebuild() {
  m_dirty = false;
  m_cmp.reset();
  m_message.clear();
  if (!m_model || !m_trace) {
    m_message = "no run yet";
  } else {
    try {
      // The selected attention array when its q and k were traced, else the layer's first.
      const AttentionMap* map = findAttentionMap(*m_trace, m_sel);
      std::string attention = map ? map->array : std::string();
      if (!map || !m_trace->find(map->companions.q)) attention.clear();
      m_cmp = compare_score_functions(*m_model, *m_trace, attention, m_sel.layer, m_sel.head, 0.0f);
    } catch (const std::exception& e) {
      m_message = QString::fromStdString(e.what());
    }
  }
  m_export->setEnabled(m_cmp.has_value());
  if (!m_cmp) {
    m_status->setText("Score functions cannot be compared on this run: " + m_message);
    for (size_t i = 0; i < m_views.size(); ++i) {
      m_views[i]->setData({});
      m_captions[i]->setText(score_function_name(all_score_functions()[i]));
    }
    return;
  }
  m_status->setText(QString("%1, head %2: %3 queries x %4 keys (q and k as the model projected them)")
                        .arg(QString::fromStdString(m_cmp->attention))
                        .arg(m_cmp->head)
                        .arg(m_cmp->lq)
                        .arg(m_cmp->lk));
  const QStringList rows = labelsOf(m_cmp->row_tokens);
  const QStringList cols = keyLabels(*m_cmp, *m_trace);
  for (size_t i = 0; i < m_views.size() && i < m_cmp->entries.size(); ++i) {
    const auto& e = m_cmp->entries[i];
    QString text = QString("<b>%1</b>").arg(score_function_name(e.function));
    if (e.models_own) text += " (the model's own)";
    if (!e.note.empty()) text += " — " + QString::fromStdString(e.note).toHtmlEscaped();
    m_captions[i]->setText(text);
    m_views[i]->setData(e.applicable ? entryHeatmap(*m_cmp, e, rows, cols) : HeatmapData{});
  }
}

FigureContent ScorePanel::figure() const {
  if (!m_cmp) throw AtlasError("no score comparison to export: " + m_message.toStdString());
  const QStringList rows = labelsOf(m_cmp->row_tokens);
  const QStringList cols = keyLabels(*m_cmp, *m_trace);
  const int64_t n = static_cast<int64_t>(m_cmp->entries.size());
  FigureContent fig;
  fig.title = QString("Score functions on %1 head %2").arg(QString::fromStdString(m_cmp->attention)).arg(m_cmp->head);
  fig.data = Tensor({n, m_cmp->lq, m_cmp->lk});
  std::vector<FigureContent> cells;
  FigureSpec spec;
  for (int64_t f = 0; f < n; ++f) {
    const auto& e = m_cmp->entries[static_cast<size_t>(f)];
    if (!e.applicable) {
      cells.push_back({});
      continue;
    }
    for (int64_t i = 0; i < m_cmp->lq; ++i)
      for (int64_t j = 0; j < m_cmp->lk; ++j)
        fig.data.data[static_cast<size_t>((f * m_cmp->lq + i) * m_cmp->lk + j)] = e.probs(i, j);
    cells.push_back(heatmapFigureContent(entryHeatmap(*m_cmp, e, rows, cols), spec));
  }
  const QSizeF one = cells.front().paint ? cells.front().sizeInches : QSizeF(4, 3.5);
  const int gridRows = static_cast<int>((n + kColumns - 1) / kColumns);
  fig.sizeInches = QSizeF(one.width() * kColumns, one.height() * gridRows);
  auto shared = std::make_shared<std::vector<FigureContent>>(std::move(cells));
  fig.paint = [shared, gridRows](QPainter& p, const QRectF& bounds, bool vector) {
    const qreal w = bounds.width() / kColumns, h = bounds.height() / gridRows;
    for (size_t i = 0; i < shared->size(); ++i) {
      const QRectF cell(bounds.left() + w * (static_cast<int>(i) % kColumns),
                        bounds.top() + h * (static_cast<int>(i) / kColumns), w, h);
      if ((*shared)[i].paint) {
        (*shared)[i].paint(p, cell, vector);
      } else {
        p.drawText(cell, Qt::AlignCenter, QString("%1: not applicable").arg(score_function_name(all_score_functions()[i])));
      }
    }
  };
  auto cmp = std::make_shared<ScoreComparison>(*m_cmp);
  fig.csv = [cmp](QTextStream& out) {
    out << "function,query,key,probability\n";
    for (const auto& e : cmp->entries) {
      if (!e.applicable) continue;
      for (int64_t i = 0; i < cmp->lq; ++i)
        for (int64_t j = 0; j < cmp->lk; ++j)
          out << score_function_name(e.function) << ',' << i << ',' << j << ','
              << QString::number(static_cast<double>(e.probs(i, j)), 'g', 9) << '\n';
    }
  };
  return fig;
}

void ScorePanel::exportTo(const QString& path, int dpi) const { writeFigure(figure(), dpi, path); }

void ScorePanel::exportDialog() {
  runExportDialog(this, "Export score functions", "scores.svg",
                  [this](const QString& path, int dpi) { exportTo(path, dpi); });
}

}  // namespace atlas::ui
