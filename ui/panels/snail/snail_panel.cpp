// The SNAIL explorer (snail_panel.h).
#include "ui/panels/snail/snail_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPainter>
#include <QPushButton>
#include <QSpinBox>
#include <QTextStream>
#include <QVBoxLayout>

#include "core/tensor/error.h"
#include "ui/export/export_dialog.h"
#include "ui/views/heatmap_view.h"
#include "core/variants/snail/snail_arrays.h"
#include "ui/panels/panel_registry.h"

namespace atlas::ui {

namespace {

// [L, L] from a traced array whose last L * L values are the matrix; future keys masked.
HeatmapData causalHeatmap(const Trace& trace, const std::string& name, const QString& title,
                          const QString& valueName) {
  const TracedArray* a = trace.find(name);
  if (!a) throw AtlasError("the SNAIL run traced no " + name);
  const int L = static_cast<int>(trace.source_tokens.size());
  HeatmapData d;
  d.rows = d.cols = L;
  d.values.assign(a->tensor.data.end() - static_cast<std::ptrdiff_t>(L) * L, a->tensor.data.end());
  d.mask.resize(d.values.size());
  for (int i = 0; i < L; ++i)
    for (int j = 0; j < L; ++j) d.mask[static_cast<size_t>(i) * L + j] = j <= i;
  for (const auto& t : trace.source_tokens) d.rowLabels << displayLabel(t.label);
  d.colLabels = d.rowLabels;
  d.title = title;
  d.rowAxis = "output step";
  d.colAxis = "input step";
  d.valueName = valueName;
  return d;
}

}  // namespace

SnailPanel::SnailPanel(QWidget* parent) : QWidget(parent) {
  setWindowTitle("SNAIL explorer");
  auto* layout = new QVBoxLayout(this);
  auto* form = new QFormLayout;
  m_text = new QLineEdit("abracadabra abracadabra");
  m_text->setMaxLength(kMaxBytes);
  m_seed = new QSpinBox;
  m_seed->setRange(0, 1 << 30);
  m_blocks = new QSpinBox;
  m_blocks->setRange(0, 8);
  m_blocks->setValue(static_cast<int>(m_spec.tc_blocks));
  m_paper = new QCheckBox("paper's dilations 2, 4, 8, ... (else 1, 2, 4, ...)");
  m_block = new QComboBox;
  form->addRow("Input (one step per byte)", m_text);
  form->addRow("Seed", m_seed);
  form->addRow("TC blocks", m_blocks);
  form->addRow("", m_paper);
  form->addRow("Attention block", m_block);
  layout->addLayout(form);
  auto* row = new QHBoxLayout;
  m_summary = new QLabel;
  m_summary->setWordWrap(true);
  auto* exportButton = new QPushButton("Export…");
  row->addWidget(m_summary, 1);
  row->addWidget(exportButton);
  layout->addLayout(row);
  auto* views = new QHBoxLayout;
  m_attention = new HeatmapView;
  m_field = new HeatmapView;
  views->addWidget(m_attention);
  views->addWidget(m_field);
  layout->addLayout(views, 1);
  resize(1100, 650);

  connect(m_text, &QLineEdit::textChanged, this, [this] { recompute(); });
  connect(m_seed, qOverload<int>(&QSpinBox::valueChanged), this, [this] { recompute(); });
  connect(m_blocks, qOverload<int>(&QSpinBox::valueChanged), this, [this] { recompute(); });
  connect(m_paper, &QCheckBox::toggled, this, [this] { recompute(); });
  connect(m_block, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] {
    if (!m_updating) showBlock();
  });
  // The same output step in both views.
  connect(m_attention, &HeatmapView::rowPinned, m_field, [this](int r) {
    if (m_field->pinnedRow() != r) m_field->setPinnedRow(r);
  });
  connect(m_field, &HeatmapView::rowPinned, m_attention, [this](int r) {
    if (m_attention->pinnedRow() != r) m_attention->setPinnedRow(r);
  });
  connect(exportButton, &QPushButton::clicked, this, &SnailPanel::exportDialog);
  recompute();
}

void SnailPanel::setText(const QString& text) { m_text->setText(text.left(kMaxBytes)); }
void SnailPanel::setSeed(int seed) { m_seed->setValue(seed); }
void SnailPanel::setTcBlocks(int blocks) { m_blocks->setValue(blocks); }
void SnailPanel::setPaperDilations(bool on) { m_paper->setChecked(on); }
void SnailPanel::setAttentionBlock(int block) { m_block->setCurrentIndex(block); }

QString SnailPanel::error() const {
  return m_trace.source_tokens.empty() ? "type some text: SNAIL runs one step per byte" : QString();
}

void SnailPanel::recompute() {
  QByteArray bytes = m_text->text().toUtf8();
  if (bytes.size() > kMaxBytes) bytes.truncate(kMaxBytes);
  m_spec.seed = static_cast<uint64_t>(m_seed->value());
  m_spec.tc_blocks = m_blocks->value();
  m_spec.paper_dilations = m_paper->isChecked();
  m_trace = Trace();
  const std::string text = bytes.toStdString();
  if (!text.empty()) {
    m_trace.source_tokens = snail_byte_tokens(text);
    snail_forward(m_spec, snail_byte_embeddings(m_spec, text), &m_trace);
  }
  // Keep the chosen block when it still exists.
  m_updating = true;
  const int keep = m_block->currentIndex();
  m_block->clear();
  for (int b = 0; b <= m_spec.tc_blocks; ++b)
    m_block->addItem(QString("attention block %1 (%2)").arg(b).arg(b == 0 ? "on the input" : QString("after TC block %1").arg(b - 1)));
  m_block->setCurrentIndex(std::clamp(keep, 0, static_cast<int>(m_spec.tc_blocks)));
  m_updating = false;
  showBlock();
  emit recomputed();
}

QString SnailPanel::summary() const {
  if (!error().isEmpty()) return error();
  const auto L = static_cast<int64_t>(m_trace.source_tokens.size());
  QStringList dil;
  for (int64_t d : snail_dilations(L, m_spec.paper_dilations)) dil << QString::number(d);
  const Tensor& rf = m_trace.find(snail_arrays::kReceptiveField)->tensor;
  int64_t reach = 0;
  for (int64_t j = 0; j < L; ++j) reach += rf.data[static_cast<size_t>((L - 1) * L + j)] > 0;
  return QString("%1 steps; each of %2 TC blocks has dense blocks with dilations %3. Through the "
                 "convolutions alone the last step reads %4 of %5 inputs; the attention blocks read all "
                 "earlier steps.")
      .arg(L)
      .arg(m_spec.tc_blocks)
      .arg(dil.join(", "))
      .arg(reach)
      .arg(L);
}

void SnailPanel::showBlock() {
  m_summary->setText(summary());
  if (!error().isEmpty()) {
    m_attention->setData({});
    m_field->setData({});
    return;
  }
  const int b = std::max(m_block->currentIndex(), 0);
  m_attention->setData(causalHeatmap(m_trace, snail_arrays::attention(b),
                                     QString("SNAIL attention block %1 (causal)").arg(b), "attention weight"));
  m_field->setData(causalHeatmap(m_trace, snail_arrays::kReceptiveField,
                                 "receptive field of the causal convolutions",
                                 "1 = reachable through the convolutions"));
}

FigureContent SnailPanel::figure() const {
  if (!error().isEmpty()) throw AtlasError(error().toStdString());
  const HeatmapData& a = m_attention->data();
  const HeatmapData& f = m_field->data();
  FigureSpec spec;
  auto left = std::make_shared<FigureContent>(heatmapFigureContent(a, spec));
  auto right = std::make_shared<FigureContent>(heatmapFigureContent(f, spec));
  FigureContent fig;
  fig.title = a.title + " beside " + f.title;
  fig.sizeInches = QSizeF(left->sizeInches.width() * 2, left->sizeInches.height());
  fig.paint = [left, right](QPainter& p, const QRectF& bounds, bool vector) {
    const qreal w = bounds.width() / 2;
    left->paint(p, QRectF(bounds.left(), bounds.top(), w, bounds.height()), vector);
    right->paint(p, QRectF(bounds.left() + w, bounds.top(), w, bounds.height()), vector);
  };
  const int64_t L = a.rows;
  fig.data = Tensor({2, L, L});
  std::copy(a.values.begin(), a.values.end(), fig.data.data.begin());
  std::copy(f.values.begin(), f.values.end(), fig.data.data.begin() + L * L);
  auto data = std::make_shared<Tensor>(fig.data);
  fig.csv = [data, L](QTextStream& out) {
    out << "output_step,input_step,attention,receptive_field\n";
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < L; ++j)
        out << i << ',' << j << ',' << QString::number(double(data->data[size_t(i * L + j)]), 'g', 9) << ','
            << data->data[size_t(L * L + i * L + j)] << '\n';
  };
  return fig;
}

void SnailPanel::exportTo(const QString& path, int dpi) const { writeFigure(figure(), dpi, path); }

void SnailPanel::exportDialog() {
  runExportDialog(this, "Export SNAIL figure", "snail.svg",
                  [this](const QString& path, int dpi) { exportTo(path, dpi); });
}

namespace variants {
// View > SNAIL explorer: the SNAIL network on the bytes of the current input.
std::vector<PanelEntry> snail_panels() {
  VariantExplorer x;
  x.menuText = "S&NAIL explorer\u2026";
  x.open = [](QWidget* parent, const ExplorerInput& input) {
    auto* panel = new SnailPanel(parent);
    panel->setWindowFlag(Qt::Window);
    panel->setAttribute(Qt::WA_DeleteOnClose);
    if (!input.sourceText.isEmpty()) panel->setText(input.sourceText);
    panel->show();
  };
  return {x};
}
}  // namespace variants

}  // namespace atlas::ui
