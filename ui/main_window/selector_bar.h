#pragma once
// The row above the heatmap: which map the views show (attention family, layer or step,
// Transformer-XL segment, head or aggregate) and how values become colours (colour map, scale,
// normalisation). It holds the run's map families and keeps a selection within them.
#include <QWidget>
#include <memory>
#include <vector>

#include "ui/views/attention_selection.h"
#include "ui/views/value_mapper.h"

class QComboBox;
class QSpinBox;

namespace atlas::ui {

class SelectorBar : public QWidget {
  Q_OBJECT
 public:
  explicit SelectorBar(QWidget* parent = nullptr);

  // A new run (null: none): its families, and `sel` moved into them (the family kept when the
  // run has it, else the first; layer and segment clamped; a head the family lacks becomes 0).
  AttentionSelection setTrace(std::shared_ptr<const Trace> trace, const AttentionSelection& sel);
  // Shows `sel`. When it names another family or segment than `shown` (its layer ranges and
  // head list differ) it is moved into the run's families as setTrace does; otherwise it is
  // shown as it is (a layer the run lacks stays, and the views say so).
  AttentionSelection show(const AttentionSelection& sel, const AttentionSelection& shown);
  const std::vector<AttentionFamily>& families() const { return m_families; }
  const AttentionFamily* family(const AttentionSelection& sel) const;
  // `sel` moved by `delta` layers (within the family) or by `delta` entries of the head list
  // (heads, then mean, max, rollout, flow); `sel` itself at either end.
  AttentionSelection stepLayer(const AttentionSelection& sel, int delta) const;
  AttentionSelection stepHead(const AttentionSelection& sel, int delta) const;

  // The colour choices (sharedScale is the View menu's, not set here).
  ColorMapping mapping() const;
  void setMapping(Colormap colormap, ColorScale scale, Normalization normalization);

 signals:
  void edited(const AttentionSelection& sel);  // the user changed family, layer, segment or head
  void mappingChanged();

 private:
  void fillHeads(AttentionSelection& sel);

  std::shared_ptr<const Trace> m_trace;
  std::vector<AttentionFamily> m_families;
  AttentionSelection m_shown;  // what the widgets show (edits start from it)
  bool m_updating = false;
  int m_layerBase = 0;  // the layer spin shows layer + this (1 for Universal Transformer steps)
  QComboBox* m_family;
  QSpinBox* m_layer;
  QSpinBox* m_segment;  // Transformer-XL families only
  QComboBox* m_head;
  QComboBox* m_colormap;
  QComboBox* m_scale;
  QComboBox* m_normalization;
};

}  // namespace atlas::ui
