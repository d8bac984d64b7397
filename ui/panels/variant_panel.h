#pragma once
// One dockable variant panel (adaptive span, ACT, LSH, Transformer-XL, GTrXL gates): a list
// of the provider's plots for the current Trace, drawn as a heatmap (HeatmapView) or a Qt
// Charts bar/line chart, with an Export button writing the plot as SVG/PDF/PNG and its data as
// .npy/.csv through the figure export. Reads only the Trace; the plots are rebuilt when the
// trace or the linked selection (layer, head, token) changes, and only while visible.
#include <QWidget>
#include <memory>

#include "ui/views/heatmap_painter.h"
#include "ui/panels/variant_plots.h"

class QComboBox;
class QLabel;
class QStackedWidget;
class QToolButton;
class QTableWidget;
class QVBoxLayout;
QT_BEGIN_NAMESPACE
class QChart;
class QChartView;
QT_END_NAMESPACE

namespace atlas::ui {

class HeatmapView;

class VariantPanel : public QWidget {
  Q_OBJECT
 public:
  explicit VariantPanel(PanelProvider provider, QWidget* parent = nullptr);
  const PanelProvider& provider() const { return m_provider; }

  // The trace and the tokenizer of the model that made it (empty: tokens shown as ids), set
  // together so that plots never label one model's run with another model's vocabulary.
  void setTrace(std::shared_ptr<const Trace> trace, std::function<QString(int32_t)> tokenText = {});
  std::shared_ptr<const Trace> trace() const { return m_trace; }
  bool available() const { return m_available; }  // the current trace has the arrays
  // The linked selection (layer, head, query); ctx.tokenText is ignored: it comes with the trace.
  void setContext(const PanelContext& ctx);
  PanelContext context() const { return m_ctx; }
  void setStyle(const HeatmapStyle& style, bool dark);

  // Builds the plots now if they are stale (they are otherwise built when the panel shows).
  void ensureBuilt();
  const std::vector<PanelPlot>& plots() const { return m_plots; }
  int currentPlot() const;
  void setCurrentPlot(int index);
  HeatmapView* matrixView() const { return m_matrix; }
  QChart* chart() const;  // the chart on screen for Bars/Curves plots, else nullptr
  QTableWidget* table() const { return m_table; }  // Table plots
  // Extra widgets above the plot (the ablation panel's layer and head choice).
  void setControls(QWidget* controls);
  void setNote(const QString& text);
  // Writes the current plot (format from the extension). Throws AtlasError.
  void exportCurrent(const QString& path, int dpi = 150) const;

 signals:
  void layerPicked(int layer);
  void headPicked(int head);
  void tokenPicked(int token);

 protected:
  void showEvent(QShowEvent*) override;

 private:
  void rebuild();
  void showPlot(int index);
  void picked(PlotAxis axis, int index);
  void connectScatter(const PanelPlot& p, QChart* chart);
  void exportDialog();

  PanelProvider m_provider;
  std::shared_ptr<const Trace> m_trace;
  PanelContext m_ctx;
  std::vector<PanelPlot> m_plots;
  bool m_available = false;
  bool m_dirty = false;
  bool m_dark = false;
  QComboBox* m_list;
  QToolButton* m_export;
  QStackedWidget* m_stack;
  HeatmapView* m_matrix;
  QChartView* m_chartView;
  QTableWidget* m_table;
  QVBoxLayout* m_layout;
  QLabel* m_note;
  HeatmapStyle m_style;
};

// The plot area of a tool panel (sweep, compare, token search) that computes its own results:
// a VariantPanel whose provider is always available and whose plots come from `plots` (which
// reads the tool's state, not the trace), with `controls` above, filling `owner`.
VariantPanel* embedToolPlots(QWidget* owner, const QString& id, const QString& title,
                             std::function<std::vector<PanelPlot>(const Trace&, const PanelContext&)> plots,
                             QWidget* controls);

}  // namespace atlas::ui
