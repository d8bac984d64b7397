#include "ui/main_window/selector_bar.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSpinBox>
#include <algorithm>

namespace atlas::ui {

namespace {

// An entry of the head list: "head 3", or an aggregate's short name ("mean", "flow") with its
// full name ("attention flow (max-flow)") as the tooltip. The short names keep the combo narrow
// enough for the attention family beside it to be read whole at 1280 pixels.
void addHeadItem(QComboBox* combo, int head) {
  const QString name = head >= 0            ? headName(head)
                       : head == HeadMean   ? QString("mean")
                       : head == HeadMax    ? QString("max")
                       : head == HeadRollout ? QString("rollout")
                       : head == HeadFlow   ? QString("flow")
                                            : headName(head);
  combo->addItem(name, head);
  combo->setItemData(combo->count() - 1, headName(head), Qt::ToolTipRole);
}

}  // namespace

SelectorBar::SelectorBar(QWidget* parent) : QWidget(parent) {
  auto* h = new QHBoxLayout(this);
  h->setContentsMargins(0, 0, 0, 0);
  m_family = new QComboBox;
  m_family->setObjectName("familyCombo");
  m_family->setToolTip("Which attention to show");
  m_family->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  m_layer = new QSpinBox;
  m_layer->setObjectName("layerSpin");
  m_layer->setPrefix("layer ");
  m_layer->setToolTip("Layer ( [ and ] )");
  m_segment = new QSpinBox;
  m_segment->setObjectName("segmentSpin");
  m_segment->setPrefix("segment ");
  m_segment->setToolTip("Transformer-XL segment: its queries over the cached memory and the segment");
  m_segment->hide();  // until a family has segments
  m_head = new QComboBox;
  m_head->setObjectName("headCombo");
  m_head->setToolTip("Head or aggregate ( , and . )");
  m_head->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  m_colormap = new QComboBox;
  m_colormap->setObjectName("colormapCombo");
  // Short names in the row, the full ones as tooltips: the row must leave the attention family
  // its whole name beside a docked side panel.
  for (const QString& name : colormapNames()) {
    m_colormap->addItem(name.section(" (", 0, 0));
    m_colormap->setItemData(m_colormap->count() - 1, "Colour map: " + name, Qt::ToolTipRole);
  }
  m_colormap->setToolTip("Colour map");
  m_scale = new QComboBox;
  m_scale->setObjectName("scaleCombo");
  m_scale->addItems({"linear", "log"});
  m_scale->setToolTip("Colour scale");
  m_normalization = new QComboBox;
  m_normalization->setObjectName("normalizationCombo");
  m_normalization->addItems({"global max", "per-row max"});
  m_normalization->setToolTip("Normalise colours to the matrix maximum or to each query row's maximum");
  h->addWidget(m_family);
  h->addWidget(m_layer);
  h->addWidget(m_segment);
  h->addWidget(m_head);
  h->addSpacing(16);
  h->addWidget(m_colormap);
  h->addWidget(m_scale);
  h->addWidget(m_normalization);
  h->addStretch(1);

  auto changed = [this] {
    if (m_updating) return;
    AttentionSelection s = m_shown;
    const int fi = m_family->currentIndex();
    if (fi >= 0 && fi < static_cast<int>(m_families.size())) {
      s.stack = m_families[size_t(fi)].stack;
      s.kind = m_families[size_t(fi)].kind;
    }
    s.layer = m_layer->value() - m_layerBase;
    s.segment = m_segment->value();
    if (m_head->currentIndex() >= 0) s.head = m_head->currentData().toInt();
    emit edited(s);
  };
  connect(m_family, &QComboBox::currentIndexChanged, this, changed);
  connect(m_layer, &QSpinBox::valueChanged, this, changed);
  connect(m_segment, &QSpinBox::valueChanged, this, changed);
  connect(m_head, &QComboBox::currentIndexChanged, this, changed);
  for (QComboBox* c : {m_colormap, m_scale, m_normalization})
    connect(c, &QComboBox::currentIndexChanged, this, [this] { emit mappingChanged(); });
}

AttentionSelection SelectorBar::setTrace(std::shared_ptr<const Trace> trace, const AttentionSelection& sel) {
  m_trace = std::move(trace);
  AttentionSelection s = sel;
  m_updating = true;
  m_families = m_trace ? attentionFamilies(*m_trace) : std::vector<AttentionFamily>{};
  m_family->clear();
  int current = 0;
  for (size_t i = 0; i < m_families.size(); ++i) {
    m_family->addItem(m_families[i].label());
    if (m_families[i].stack == s.stack && m_families[i].kind == s.kind) current = static_cast<int>(i);
  }
  if (!m_families.empty()) {
    m_family->setCurrentIndex(current);
    const AttentionFamily& f = m_families[static_cast<size_t>(current)];
    s.stack = f.stack;
    s.kind = f.kind;
    // A Universal Transformer's spin counts steps from 1 as the trace names them (step1...).
    m_layerBase = f.steps ? 1 : 0;
    m_layer->setPrefix(f.layerWord() + " ");
    m_layer->setToolTip(f.steps ? "Universal Transformer step ( [ and ] )" : "Layer ( [ and ] )");
    s.layer = std::clamp(s.layer, 0, std::max(0, f.layers - 1));
    m_layer->setRange(m_layerBase, m_layerBase + std::max(0, f.layers - 1));
    m_layer->setValue(s.layer + m_layerBase);
    s.segment = std::clamp(s.segment, 0, std::max(0, f.segments - 1));
    m_segment->setRange(0, std::max(0, f.segments - 1));
    m_segment->setValue(s.segment);
    m_segment->setVisible(f.segments > 0);
  } else {
    m_segment->hide();
  }
  m_updating = false;
  fillHeads(s);
  m_shown = s;
  return s;
}

void SelectorBar::fillHeads(AttentionSelection& s) {
  m_updating = true;
  m_head->clear();
  if (const AttentionFamily* f = findFamily(m_families, s.stack, s.kind)) {
    for (int h = 0; h < f->heads; ++h) addHeadItem(m_head, h);
    addHeadItem(m_head, HeadMean);
    addHeadItem(m_head, HeadMax);
    // Not across XL memory or cross-attention: the product needs the same tokens in every layer.
    if (m_trace && rolloutApplies(*m_trace, *f, s.segment)) {
      addHeadItem(m_head, HeadRollout);
      addHeadItem(m_head, HeadFlow);
    }
    int idx = m_head->findData(s.head);
    if (idx < 0) {
      idx = 0;
      s.head = 0;
    }
    m_head->setCurrentIndex(idx);
  }
  m_updating = false;
}

AttentionSelection SelectorBar::show(const AttentionSelection& sel, const AttentionSelection& shown) {
  if (sel.stack != shown.stack || sel.kind != shown.kind || sel.segment != shown.segment)
    return setTrace(m_trace, sel);  // layer and segment ranges and the head list (rollout) depend on them
  m_updating = true;
  m_layer->setValue(sel.layer + m_layerBase);
  const int idx = m_head->findData(sel.head);
  if (idx >= 0) m_head->setCurrentIndex(idx);
  m_updating = false;
  m_shown = sel;
  return sel;
}

const AttentionFamily* SelectorBar::family(const AttentionSelection& sel) const {
  return findFamily(m_families, sel.stack, sel.kind);
}

AttentionSelection SelectorBar::stepLayer(const AttentionSelection& sel, int delta) const {
  AttentionSelection s = sel;
  s.layer = std::clamp(s.layer + delta, 0, m_layer->maximum() - m_layerBase);
  return s;
}

AttentionSelection SelectorBar::stepHead(const AttentionSelection& sel, int delta) const {
  const int n = m_head->count();
  if (n == 0) return sel;
  const int idx = std::clamp(m_head->currentIndex() + delta, 0, n - 1);
  AttentionSelection s = sel;
  s.head = m_head->itemData(idx).toInt();
  return s;
}

ColorMapping SelectorBar::mapping() const {
  ColorMapping m;
  m.colormap = static_cast<Colormap>(std::max(0, m_colormap->currentIndex()));
  m.scale = m_scale->currentIndex() == 1 ? ColorScale::Log : ColorScale::Linear;
  m.normalization = m_normalization->currentIndex() == 1 ? Normalization::Row : Normalization::Global;
  return m;
}

void SelectorBar::setMapping(Colormap colormap, ColorScale scale, Normalization normalization) {
  m_colormap->setCurrentIndex(static_cast<int>(colormap));
  m_scale->setCurrentIndex(scale == ColorScale::Log ? 1 : 0);
  m_normalization->setCurrentIndex(normalization == Normalization::Row ? 1 : 0);
}

}  // namespace atlas::ui
