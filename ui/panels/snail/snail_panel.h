#pragma once
// "SNAIL explorer" (seed 004): the SNAIL network of core/variants/snail/snail.h (Attn, TC, Attn, ...,
// seeded weights) on the bytes of a text, with the receptive field of its causal dilated
// convolutions drawn beside the attention of a chosen attention block: which earlier steps an
// output can read through the convolutions alone, and how the attention reaches past them.
// Every control change re-runs the network with the core functions (no model forward).
// Pinning a query in one heatmap pins it in the other. Export writes both side by side as one
// SVG/PDF/PNG figure, or .npy [2, L, L] (attention, receptive field) and .csv.
#include <QWidget>

#include "ui/export/figure_export.h"
#include "core/variants/snail/snail.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QSpinBox;

namespace atlas::ui {

class HeatmapView;

class SnailPanel : public QWidget {
  Q_OBJECT
 public:
  static constexpr int kMaxBytes = 1024;  // a 1024 x 1024 pair of heatmaps stays interactive

  explicit SnailPanel(QWidget* parent = nullptr);

  void setText(const QString& text);  // truncated to kMaxBytes bytes of UTF-8
  void setSeed(int seed);
  void setTcBlocks(int blocks);
  void setPaperDilations(bool on);
  void setAttentionBlock(int block);  // 0 .. tc blocks

  const Trace& trace() const { return m_trace; }
  const SnailSpec& spec() const { return m_spec; }
  QString summary() const;  // the dilations and how far the last step reaches
  QString error() const;    // why nothing is shown (empty text), else empty
  HeatmapView* attentionView() const { return m_attention; }
  HeatmapView* fieldView() const { return m_field; }
  FigureContent figure() const;  // throws AtlasError when nothing was computed
  void exportTo(const QString& path, int dpi = 150) const;

 signals:
  void recomputed();

 private:
  void recompute();
  void showBlock();
  void exportDialog();

  SnailSpec m_spec;
  Trace m_trace;
  bool m_updating = false;
  QLineEdit* m_text = nullptr;
  QSpinBox* m_seed = nullptr;
  QSpinBox* m_blocks = nullptr;
  QCheckBox* m_paper = nullptr;
  QComboBox* m_block = nullptr;
  QLabel* m_summary = nullptr;
  HeatmapView* m_attention = nullptr;
  HeatmapView* m_field = nullptr;
};

}  // namespace atlas::ui
