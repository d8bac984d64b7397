// The NTM explorer panel (see ntm_panel.h). Slider scales: beta 0..50 in 0.1 steps, gate
// 0..1 in 0.01, gamma 1..20 in 0.1, shift weights 0..100 each (normalised to sum 1).
#include "ui/panels/ntm/ntm_panel.h"

#include <QComboBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPainter>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSlider>
#include <QSpinBox>
#include <QVBoxLayout>
#include <cmath>

#include "core/tensor/error.h"
#include "core/tensor/random.h"
#include "ui/dialog_folders.h"
#include "core/variants/ntm/ntm_arrays.h"
#include "ui/panels/ntm/ntm_figure.h"
#include "ui/panels/panel_registry.h"

namespace atlas::ui {

class NtmFigureWidget : public QWidget {
 public:
  explicit NtmFigureWidget(QWidget* parent) : QWidget(parent) { setMinimumSize(720, 460); }
  void setRun(const NtmRun* run, NtmFigureSelection sel) {
    m_run = run;
    m_sel = sel;
    update();
  }

 protected:
  void paintEvent(QPaintEvent*) override {
    if (!m_run) return;
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    paintNtmFigure(p, QRectF(rect()), *m_run, m_sel, palette().window().color().lightness() < 128);
  }

 private:
  const NtmRun* m_run = nullptr;
  NtmFigureSelection m_sel;
};

namespace {

QString formatVector(const RowVec& v) {
  QStringList parts;
  for (int64_t i = 0; i < v.size(); ++i) parts << QString::number(double(v[i]), 'g', 7);
  return parts.join(", ");
}

// "1, 0.5, -2" -> [3]; throws AtlasError naming the field when it is not `n` numbers.
RowVec parseVector(const QString& text, int64_t n, const char* field) {
  const QStringList parts = text.split(',', Qt::SkipEmptyParts);
  if (parts.size() != n)
    throw AtlasError(std::string(field) + " needs " + std::to_string(n) + " comma-separated numbers, got " +
                     std::to_string(parts.size()));
  RowVec v(n);
  for (int64_t i = 0; i < n; ++i) {
    bool ok = false;
    v[i] = parts[int(i)].trimmed().toFloat(&ok);
    if (!ok) throw AtlasError(std::string(field) + ": \"" + parts[int(i)].trimmed().toStdString() + "\" is not a number");
  }
  return v;
}

QSlider* makeSlider(int lo, int hi, const char* name) {
  auto* s = new QSlider(Qt::Horizontal);
  s->setRange(lo, hi);
  s->setObjectName(name);
  return s;
}

}  // namespace

NtmPanel::NtmPanel(QWidget* parent) : QWidget(parent) {
  setWindowTitle("Neural Turing Machine explorer");
  buildUi();
  resetMachine();
}

void NtmPanel::buildUi() {
  auto* form = new QFormLayout;
  m_seed = new QSpinBox;
  m_seed->setRange(0, 1 << 30);
  m_seed->setValue(4);
  m_seed->setObjectName("ntmSeed");
  m_seed->setToolTip("Seed of the initial memory (8 slots x 4, normal entries); resets every control");
  m_steps = new QSpinBox;
  m_steps->setRange(1, 256);
  m_steps->setValue(6);
  m_steps->setObjectName("ntmSteps");
  m_step = new QSpinBox;
  m_step->setObjectName("ntmStep");
  m_head = new QComboBox;
  m_head->setObjectName("ntmHead");
  m_beta = makeSlider(0, 500, "ntmBeta");
  m_gate = makeSlider(0, 100, "ntmGate");
  m_gamma = makeSlider(10, 200, "ntmGamma");
  const char* shiftNames[3] = {"ntmShiftMinus", "ntmShiftZero", "ntmShiftPlus"};
  for (int i = 0; i < 3; ++i) m_shift[i] = makeSlider(0, 100, shiftNames[i]);
  m_key = new QLineEdit;
  m_key->setObjectName("ntmKey");
  m_erase = new QLineEdit;
  m_erase->setObjectName("ntmErase");
  m_add = new QLineEdit;
  m_add->setObjectName("ntmAdd");
  m_values = new QLabel;
  m_values->setWordWrap(true);
  m_error = new QLabel;
  m_error->setStyleSheet("color: #c0392b");
  m_error->setWordWrap(true);
  form->addRow("Memory seed", m_seed);
  form->addRow("Steps", m_steps);
  form->addRow("Step", m_step);
  form->addRow("Head", m_head);
  form->addRow("Key k", m_key);
  form->addRow("Strength \u03b2", m_beta);
  form->addRow("Gate g", m_gate);
  form->addRow("Shift \u22121", m_shift[0]);
  form->addRow("Shift 0", m_shift[1]);
  form->addRow("Shift +1", m_shift[2]);
  form->addRow("Sharpen \u03b3", m_gamma);
  form->addRow("Erase e", m_erase);
  form->addRow("Add a", m_add);
  form->addRow(m_values);
  form->addRow(m_error);
  auto* exportButton = new QPushButton("Export\u2026");
  form->addRow(exportButton);
  auto* controls = new QWidget;
  controls->setLayout(form);
  controls->setMaximumWidth(340);
  m_figure = new NtmFigureWidget(this);
  auto* layout = new QHBoxLayout(this);
  layout->addWidget(controls);
  layout->addWidget(m_figure, 1);

  connect(m_seed, &QSpinBox::valueChanged, this, [this] { resetMachine(); });
  connect(m_steps, &QSpinBox::valueChanged, this, [this] { resetMachine(); });
  connect(m_step, &QSpinBox::valueChanged, this, [this] { loadControls(); });
  connect(m_head, &QComboBox::currentIndexChanged, this, [this] { loadControls(); });
  for (QSlider* s : {m_beta, m_gate, m_gamma, m_shift[0], m_shift[1], m_shift[2]})
    connect(s, &QSlider::valueChanged, this, [this] { storeControls(); });
  for (QLineEdit* e : {m_key, m_erase, m_add})
    connect(e, &QLineEdit::editingFinished, this, [this] { storeControls(); });
  connect(exportButton, &QPushButton::clicked, this, [this] { exportDialog(); });
}

int NtmPanel::step() const { return m_step->value(); }
int NtmPanel::head() const { return m_head->currentIndex(); }
void NtmPanel::setStep(int step) { m_step->setValue(step); }
void NtmPanel::setHead(int head) { m_head->setCurrentIndex(head); }

const NtmHeadControls& NtmPanel::controls(int step, int head) const {
  return m_controls.at(size_t(step)).at(size_t(head));
}

// Defaults that show every stage doing something: the read head looks up row t by content
// (beta 10); the write head ignores content (g = 0) and walks the memory by +1 each step,
// erasing each slot it visits and writing a marker into column t mod M.
void NtmPanel::resetMachine() {
  Rng rng(static_cast<uint64_t>(m_seed->value()));
  m_slots = 8;
  m_width = 4;
  setHeads({{"read0", false}, {"write0", true}});
  m_memory0.resize(m_slots, m_width);
  for (int64_t i = 0; i < m_slots; ++i)
    for (int64_t j = 0; j < m_width; ++j) m_memory0(i, j) = static_cast<float>(rng.normal());
  const int T = m_steps->value();
  m_controls.assign(size_t(T), {});
  for (int t = 0; t < T; ++t) {
    NtmHeadControls read;
    read.key = m_memory0.row(t % m_slots);
    read.beta = 10.0f;
    read.gate = 1.0f;
    read.shift = RowVec::Zero(3);
    read.shift[1] = 1.0f;
    read.gamma = 1.0f;
    NtmHeadControls write;
    write.key = RowVec::Zero(m_width);
    write.beta = 0.0f;
    write.gate = 0.0f;
    write.shift = RowVec::Zero(3);
    write.shift[2] = 1.0f;
    write.gamma = 1.0f;
    write.erase = RowVec::Ones(m_width);
    write.add = RowVec::Zero(m_width);
    write.add[t % m_width] = 1.0f + 0.5f * float(t);
    m_controls[size_t(t)] = {read, write};
  }
  m_step->setRange(0, T - 1);
  recompute();
  loadControls();
}

void NtmPanel::setHeads(std::vector<NtmHeadSpec> heads) {
  m_loading = true;  // repopulating the combo must not store controls into the wrong head
  m_heads = std::move(heads);
  m_head->clear();
  for (const auto& h : m_heads) m_head->addItem(QString::fromStdString(h.name));
  m_loading = false;
}

void NtmPanel::loadTrace(const Trace& trace) {
  const TracedArray* mem = trace.find(ntm_arrays::kMemory);
  if (!mem || mem->tensor.shape.size() != 3)
    throw AtlasError(std::string("this run has no ") + ntm_arrays::kMemory +
                     " array (run an NTM model such as preset:ntm-small)");
  const int64_t T = mem->tensor.shape[0] - 1, N = mem->tensor.shape[1], M = mem->tensor.shape[2];
  if (T < 1 || T > 256) throw AtlasError("the NTM explorer shows 1..256 steps; this run has " + std::to_string(T));
  std::vector<NtmHeadSpec> heads;
  for (const auto& a : trace.arrays) {
    const std::string head = ntm_arrays::head_of_weights(a.name);
    if (!head.empty()) heads.push_back({head, head.rfind("write", 0) == 0});
  }
  auto rows = [&](const std::string& name, int64_t t, int64_t width) -> RowVec {
    const TracedArray* a = trace.find(name);
    if (!a || a->tensor.numel() < (t + 1) * width) throw AtlasError("this run's " + name + " array is missing or short");
    return Eigen::Map<const RowVec>(a->tensor.data.data() + t * width, width);
  };
  std::vector<std::vector<NtmHeadControls>> controls(static_cast<size_t>(T));
  for (int64_t t = 0; t < T; ++t)
    for (const auto& h : heads) {
      auto p = [&](const char* what) { return ntm_arrays::head_array(h.name, what); };
      const TracedArray* shift = trace.find(p("shift"));
      if (!shift || shift->tensor.shape.size() != 2 || shift->tensor.shape[1] != 3)
        throw AtlasError("the explorer's sliders edit shifts -1, 0, +1; " + p("shift") + " has another range");
      NtmHeadControls c;
      c.key = rows(p("key"), t, M);
      c.beta = rows(p("beta"), t, 1)[0];
      c.gate = rows(p("gate"), t, 1)[0];
      c.shift = rows(p("shift"), t, 3);
      c.gamma = rows(p("gamma"), t, 1)[0];
      if (h.write) {
        c.erase = rows(p("erase"), t, M);
        c.add = rows(p("add"), t, M);
      }
      controls[size_t(t)].push_back(std::move(c));
    }
  if (heads.empty()) throw AtlasError("this run has no " + ntm_arrays::head_array("<head>", "weights") + " arrays");
  m_slots = int(N);
  m_width = int(M);
  m_memory0 = Eigen::Map<const Mat>(mem->tensor.data.data(), N, M);
  m_controls = std::move(controls);
  setHeads(std::move(heads));
  {
    const QSignalBlocker block(m_steps);  // keep the loaded controls (valueChanged resets)
    m_steps->setValue(int(T));
  }
  m_step->setRange(0, int(T) - 1);
  m_step->setValue(0);
  m_head->setCurrentIndex(0);
  recompute();
  loadControls();
}

// The step and head widgets point at existing controls (not mid-way through a reload).
bool NtmPanel::selectionValid() const {
  return !m_loading && head() >= 0 && step() >= 0 && size_t(step()) < m_controls.size() &&
         size_t(head()) < m_controls[size_t(step())].size() && size_t(head()) < m_heads.size();
}

void NtmPanel::loadControls() {
  if (!selectionValid()) return;
  m_loading = true;
  const NtmHeadControls& c = controls(step(), head());
  const bool write = m_heads[size_t(head())].write;
  m_key->setText(formatVector(c.key));
  m_beta->setValue(int(std::lround(c.beta * 10)));
  m_gate->setValue(int(std::lround(c.gate * 100)));
  m_gamma->setValue(int(std::lround(c.gamma * 10)));
  for (int i = 0; i < 3; ++i) m_shift[i]->setValue(int(std::lround(c.shift[i] * 100)));
  m_erase->setEnabled(write);
  m_add->setEnabled(write);
  m_erase->setText(write ? formatVector(c.erase) : QString());
  m_add->setText(write ? formatVector(c.add) : QString());
  m_loading = false;
  recompute();
}

void NtmPanel::storeControls() {
  if (!selectionValid()) return;
  NtmHeadControls& c = m_controls[size_t(step())][size_t(head())];
  try {
    c.key = parseVector(m_key->text(), m_width, "key");
    if (m_heads[size_t(head())].write) {
      c.erase = parseVector(m_erase->text(), m_width, "erase");
      c.add = parseVector(m_add->text(), m_width, "add");
    }
  } catch (const AtlasError& e) {
    m_error->setText(QString::fromStdString(e.what()));
    return;
  }
  c.beta = float(m_beta->value()) / 10.0f;
  c.gate = float(m_gate->value()) / 100.0f;
  c.gamma = float(m_gamma->value()) / 10.0f;
  const int sum = m_shift[0]->value() + m_shift[1]->value() + m_shift[2]->value();
  for (int i = 0; i < 3; ++i)  // all three at zero would leave no weight: keep "no shift"
    c.shift[i] = sum > 0 ? float(m_shift[i]->value()) / float(sum) : (i == 1 ? 1.0f : 0.0f);
  recompute();
}

void NtmPanel::recompute() {
  try {
    m_run = ntm_run_controls(m_heads, m_memory0, m_controls);
    m_error->clear();
  } catch (const AtlasError& e) {
    m_error->setText(QString::fromStdString(e.what()));
    return;
  }
  if (selectionValid()) {
    const NtmHeadControls& c = controls(step(), head());
    m_values->setText(QString("\u03b2 = %1, g = %2, \u03b3 = %3, s = [%4]")
                          .arg(double(c.beta))
                          .arg(double(c.gate))
                          .arg(double(c.gamma))
                          .arg(formatVector(c.shift)));
  }
  m_figure->setRun(&m_run, {step(), head()});
  emit recomputed();
}

void NtmPanel::exportTo(const QString& path) const { exportNtmFigure(m_run, {step(), head()}, path); }

void NtmPanel::exportDialog() {
  const QString path = QFileDialog::getSaveFileName(this, "Export the NTM figure", dialogStart(DialogPurpose::Export, "ntm.svg"),
                                                    "Figures (*.svg *.pdf *.png);;Stages as NumPy (*.npy)");
  if (path.isEmpty()) return;
  rememberDialogChoice(DialogPurpose::Export, path);
  try {
    exportTo(path);
  } catch (const AtlasError& e) {
    QMessageBox::warning(this, "Export failed", QString::fromStdString(e.what()));
  }
}

namespace variants {
// View > Neural Turing Machine explorer: a separate window, no model run; one at a time. On an
// NTM model's run it starts from the model's own controls.
std::vector<PanelEntry> ntm_panels() {
  VariantExplorer x;
  x.menuText = "Neural &Turing Machine explorer\u2026";
  x.open = [](QWidget* parent, const ExplorerInput& input) {
    if (auto* open = parent->findChild<NtmPanel*>()) {
      open->raise();
      open->activateWindow();
      return;
    }
    auto* panel = new NtmPanel(parent);
    panel->setWindowFlag(Qt::Window);
    panel->setAttribute(Qt::WA_DeleteOnClose);
    if (input.trace && input.trace->find(ntm_arrays::kMemory)) {
      try {
        panel->loadTrace(*input.trace);
      } catch (const AtlasError& e) {
        QMessageBox::information(panel, "Neural Turing Machine explorer", QString::fromStdString(e.what()));
      }
    }
    panel->show();
  };
  return {x};
}
}  // namespace variants

}  // namespace atlas::ui
