#include "ui/main_window/main_window.h"
#include "core/formats/input_file.h"
#include "core/model/memory_budget.h"
#include "ui/tools/compare_panel.h"
#include "ui/tools/search_panel.h"
#include "ui/tools/sweep_panel.h"

#include <QApplication>
#include <QComboBox>
#include <QDockWidget>
#include <QFile>
#include <QHBoxLayout>
#include <QLabel>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QScrollArea>
#include <QSpinBox>
#include <QStatusBar>
#include <QToolButton>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>
#include <cstdio>

#include "core/analysis/weight_check.h"
#include "ui/views/heatmap_view.h"
#include "ui/views/image_input_view.h"
#include "core/model/demos.h"
#include "core/tensor/error.h"
#include "ui/views/model_view.h"
#include "core/input/patch_input.h"
#include "ui/views/positional_view.h"
#include "ui/main_window/run_controller.h"
#include "core/variants/sagan/sagan.h"
#include "ui/views/token_chips.h"
#include "ui/views/token_view.h"
#include "ui/views/pattern_view.h"
#include "ui/panels/variant_panel.h"
#include "ui/views/attention_heatmap.h"
#include "ui/views/aggregate_heatmaps.h"

namespace atlas::ui {

QString MainWindow::sampleText() {
  QFile f(":/atlas/samples/sample.txt");
  if (f.open(QIODevice::ReadOnly | QIODevice::Text)) return QString::fromUtf8(f.readAll()).trimmed();
  return "The animal did not cross the street because it was too tired.";
}

QString MainWindow::defaultTextFor(const QString& spec) {
  if (spec.startsWith("demo:")) {
    try {
      return QString::fromStdString(demo_info(spec.mid(5).toStdString()).sample);
    } catch (const AtlasError&) {
      // Unknown demo: loadModel reports it; fall back to the sentence.
    }
  }
  return sampleText();
}

void MainWindow::openDemo(const QString& name) {
  setSourceText(defaultTextFor("demo:" + name));
  loadModel("demo:" + name);
}

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setWindowTitle("Attention Atlas");
  setAcceptDrops(true);
  m_runner = new RunController(this);
  buildUi();
  buildMenus();
  buildVariantPanels();
  installViewContextMenus();
  connectRunner();
  restoreSettings();
  buildBackendUi();
  updateStyles();
}

MainWindow::~MainWindow() {
  // Docks hidden while the window is torn down must not call back into its destroyed members.
  for (const auto& [dock, panel] : m_variantDocks) dock->disconnect(this);
  if (m_scoreDock) m_scoreDock->disconnect(this);
}

namespace {

QPlainTextEdit* makeTextBox(const QString& placeholder, int lines) {
  auto* e = new QPlainTextEdit;
  e->setPlaceholderText(placeholder);
  e->setTabChangesFocus(true);
  const int h = e->fontMetrics().lineSpacing() * lines + 14;
  e->setFixedHeight(h);
  return e;
}

}  // namespace

void MainWindow::buildUi() {
  auto* central = new QWidget;
  auto* v = new QVBoxLayout(central);
  v->setContentsMargins(8, 6, 8, 4);
  v->setSpacing(4);

  auto* srcRow = new QHBoxLayout;
  auto* srcLabel = new QLabel("&Input:");
  m_source = makeTextBox(kSourcePlaceholder, 2);
  m_source->setObjectName("sourceEdit");
  srcLabel->setBuddy(m_source);
  srcRow->addWidget(srcLabel, 0, Qt::AlignTop);
  srcRow->addWidget(m_source, 1);
  v->addLayout(srcRow);

  m_targetRow = new QWidget;
  auto* tgtRow = new QHBoxLayout(m_targetRow);
  tgtRow->setContentsMargins(0, 0, 0, 0);
  auto* tgtLabel = new QLabel("&Target:");
  m_target = makeTextBox("Decoder input of the encoder-decoder model", 1);
  m_target->setObjectName("targetEdit");
  tgtLabel->setBuddy(m_target);
  tgtRow->addWidget(tgtLabel, 0, Qt::AlignTop);
  tgtRow->addWidget(m_target, 1);
  v->addWidget(m_targetRow);
  m_targetRow->hide();

  m_sourceChips = new TokenChips;
  m_sourceChips->setToolTip("Source tokens; click one to select it in every view");
  m_targetChips = new TokenChips;
  m_targetChips->setToolTip("Target tokens; click one to select it in every view");
  v->addWidget(new TokenChipsArea(m_sourceChips));
  auto* targetChipsArea = new TokenChipsArea(m_targetChips, 2);
  v->addWidget(targetChipsArea);
  targetChipsArea->hide();
  connect(m_target, &QPlainTextEdit::textChanged, targetChipsArea,
          [this, targetChipsArea] { targetChipsArea->setVisible(m_targetRow->isVisible()); });

  m_errorLabel = new QLabel;
  m_errorLabel->setWordWrap(true);
  m_errorLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_errorLabel->setStyleSheet("QLabel { color: white; background: #b3261e; padding: 4px; border-radius: 3px; }");
  m_errorLabel->hide();
  v->addWidget(m_errorLabel);

  auto* bar = new QWidget;
  buildSelectors(bar);
  v->addWidget(bar);

  m_heatmap = new HeatmapView;
  m_heatmap->setToolTip(QString());
  v->addWidget(m_heatmap, 1);
  setCentralWidget(central);

  m_modelView = new ModelView;
  m_modelDock = new QDockWidget("Model: layers \u00D7 heads", this);
  m_modelDock->setObjectName("modelDock");
  m_modelDock->setWidget(m_modelView);
  addDockWidget(Qt::RightDockWidgetArea, m_modelDock);

  auto* tokenPanel = new QWidget;
  auto* tl = new QVBoxLayout(tokenPanel);
  tl->setContentsMargins(2, 2, 2, 2);
  m_tokenHeads = new QComboBox;
  m_tokenHeads->addItems({"Selected head", "All heads of the layer"});
  tl->addWidget(m_tokenHeads);
  m_tokenView = new TokenView;
  tl->addWidget(m_tokenView, 1);
  m_tokenDock = new QDockWidget("Tokens", this);
  m_tokenDock->setObjectName("tokenDock");
  m_tokenDock->setWidget(tokenPanel);
  addDockWidget(Qt::RightDockWidgetArea, m_tokenDock);
  tabifyDockWidget(m_modelDock, m_tokenDock);

  m_positional = new PositionalView;
  m_positionalDock = new QDockWidget("Positional encoding", this);
  m_positionalDock->setObjectName("positionalDock");
  m_positionalDock->setWidget(m_positional);
  addDockWidget(Qt::RightDockWidgetArea, m_positionalDock);
  tabifyDockWidget(m_tokenDock, m_positionalDock);
  m_modelDock->raise();
  resizeDocks({m_modelDock}, {420}, Qt::Horizontal);

  m_status = new QLabel("Starting\u2026");
  m_status->setObjectName("runStatus");
  statusBar()->addWidget(m_status, 1);
  m_progress = new QProgressBar;
  m_progress->setRange(0, 1000);
  m_progress->setMaximumWidth(180);
  m_progress->hide();
  m_cancel = new QToolButton;
  m_cancel->setText("Cancel");
  m_cancel->setObjectName("cancelButton");
  m_cancel->hide();
  m_memoryNote = new QLabel;
  m_memoryNote->setObjectName("memoryNote");
  m_memoryNote->setStyleSheet("color: #b35900;");
  m_memoryNote->hide();
  statusBar()->addPermanentWidget(m_memoryNote);
  statusBar()->addPermanentWidget(m_progress);
  statusBar()->addPermanentWidget(m_cancel);

  connect(m_source, &QPlainTextEdit::textChanged, this, &MainWindow::onSourceEdited);
  connect(m_target, &QPlainTextEdit::textChanged, this, &MainWindow::onTextChanged);
  connect(m_cancel, &QToolButton::clicked, this, [this] {
    const bool loading = m_runner->isLoading();
    m_runner->cancel();
    if (!loading) m_status->setText("Run cancelled");  // a load says so when it has stopped
  });
  // The heatmap and token view pin rows of the map on screen; an XL segment's rows start at
  // its first token.
  auto pinRow = [this](int row) { selectQuery(row < 0 ? -1 : row + m_queryBegin); };
  connect(m_heatmap, &HeatmapView::rowPinned, this, pinRow);
  connect(m_tokenView, &TokenView::queryPinned, this, pinRow);
  connect(m_sourceChips, &TokenChips::tokenClicked, this, [this](int i) {
    // Source chips are the query rows unless the view shows the decoder side.
    if (m_sel.stack == "decoder" && m_trace && !m_trace->target_tokens.empty()) return;
    selectQuery(i);
  });
  connect(m_targetChips, &TokenChips::tokenClicked, this, [this](int i) {
    if (m_sel.stack == "decoder") selectQuery(i);
  });
  connect(m_modelView, &ModelView::headClicked, this, [this](int layer, int head) {
    AttentionSelection s = m_sel;
    s.layer = layer;
    s.head = head;
    setSelection(s);
  });
  connect(m_tokenHeads, &QComboBox::currentIndexChanged, this, [this] { updateViews(); });
}

void MainWindow::buildSelectors(QWidget* bar) {
  auto* h = new QHBoxLayout(bar);
  h->setContentsMargins(0, 0, 0, 0);
  m_familyCombo = new QComboBox;
  m_familyCombo->setToolTip("Which attention to show");
  m_familyCombo->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  m_layerSpin = new QSpinBox;
  m_layerSpin->setObjectName("layerSpin");
  m_layerSpin->setPrefix("layer ");
  m_layerSpin->setToolTip("Layer ( [ and ] )");
  m_segmentSpin = new QSpinBox;
  m_segmentSpin->setObjectName("segmentSpin");
  m_segmentSpin->setPrefix("segment ");
  m_segmentSpin->setToolTip("Transformer-XL segment: its queries over the cached memory and the segment");
  m_segmentSpin->hide();  // until a family has segments
  m_headCombo = new QComboBox;
  m_headCombo->setObjectName("headCombo");
  m_headCombo->setToolTip("Head or aggregate ( , and . )");
  m_headCombo->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  m_cmapCombo = new QComboBox;
  m_cmapCombo->addItems(colormapNames());
  m_scaleCombo = new QComboBox;
  m_scaleCombo->addItems({"linear", "log"});
  m_scaleCombo->setToolTip("Colour scale");
  m_normCombo = new QComboBox;
  m_normCombo->addItems({"global max", "per-row max"});
  m_normCombo->setToolTip("Normalise colours to the matrix maximum or to each query row's maximum");
  h->addWidget(m_familyCombo);
  h->addWidget(m_layerSpin);
  h->addWidget(m_segmentSpin);
  h->addWidget(m_headCombo);
  h->addSpacing(16);
  h->addWidget(new QLabel("Colours:"));
  h->addWidget(m_cmapCombo);
  h->addWidget(m_scaleCombo);
  h->addWidget(m_normCombo);
  h->addStretch(1);

  auto selectorsChanged = [this] {
    if (m_updatingSelectors) return;
    AttentionSelection s = m_sel;
    const int fi = m_familyCombo->currentIndex();
    if (fi >= 0 && fi < static_cast<int>(m_families.size())) {
      s.stack = m_families[fi].stack;
      s.kind = m_families[fi].kind;
    }
    s.layer = m_layerSpin->value() - m_layerBase;
    s.segment = m_segmentSpin->value();
    if (m_headCombo->currentIndex() >= 0) s.head = m_headCombo->currentData().toInt();
    setSelection(s);
  };
  connect(m_familyCombo, &QComboBox::currentIndexChanged, this, selectorsChanged);
  connect(m_layerSpin, &QSpinBox::valueChanged, this, selectorsChanged);
  connect(m_segmentSpin, &QSpinBox::valueChanged, this, selectorsChanged);
  connect(m_headCombo, &QComboBox::currentIndexChanged, this, selectorsChanged);
  for (QComboBox* c : {m_cmapCombo, m_scaleCombo, m_normCombo})
    connect(c, &QComboBox::currentIndexChanged, this, [this] { updateStyles(); });
}

void MainWindow::connectRunner() {
  connect(m_runner, &RunController::modelLoaded, this, &MainWindow::onModelLoaded);
  connect(m_runner, &RunController::modelLoadFailed, this, &MainWindow::onModelLoadFailed);
  connect(m_runner, &RunController::modelLoading, this, [this](const QString& spec) {
    m_status->setText("Loading " + spec + "\u2026");
    m_runClock.start();  // a load's progress shows after the same delay as a run's
  });
  connect(m_runner, &RunController::modelLoadCancelled, this, [this](const QString& spec) {
    m_status->setText("Opening " + spec + " cancelled" +
                      (m_model ? "; " + QString::fromStdString(m_model->config().name) + " is still open" : QString()));
  });
  connect(m_runner, &RunController::runFinished, this, &MainWindow::onRunFinished);
  connect(m_runner, &RunController::runFailed, this, &MainWindow::onRunFailed);
  connect(m_runner, &RunController::runStarted, this, [this] { m_runClock.start(); });
  auto showProgress = [this](double f, const QString& stage) {
    // Only long runs and loads get a progress bar; a flash of one per keystroke would be noise.
    if (m_runClock.isValid() && m_runClock.elapsed() > 150) {
      m_progress->show();
      m_cancel->show();
      m_progress->setValue(static_cast<int>(f * 1000));
      m_progress->setFormat(stage + " %p%");
    }
  };
  connect(m_runner, &RunController::runProgress, this, showProgress);
  connect(m_runner, &RunController::runMemory, this, &MainWindow::showRunMemory);
  connect(m_runner, &RunController::loadProgress, this, showProgress);
  connect(m_runner, &RunController::busyChanged, this, [this](bool busy) {
    if (!busy) {
      m_progress->hide();
      m_cancel->hide();
    }
  });
}

void MainWindow::loadModel(const QString& spec) { m_runner->loadModel(spec); }

void MainWindow::showRunMemory(double needed, double available) {
  // Past half of what the process may allocate, a longer input or another program can tip the
  // run over the guard's limit (90%, core/model/memory_budget.h): say so before it does.
  const bool close = available > 0 && needed > 0.5 * available;
  m_memoryNote->setVisible(close);
  if (!close) return;
  const auto bytes = [](double b) { return QString::fromStdString(format_bytes(static_cast<uint64_t>(b))); };
  m_memoryNote->setText(QString("Memory: this run needs %1 of %2 available (%3%)")
                            .arg(bytes(needed), bytes(available))
                            .arg(static_cast<int>(std::lround(100.0 * needed / available))));
  m_memoryNote->setToolTip(
      "The attention maps of every layer and head dominate. Runs above 90% of the available memory "
      "are refused; a shorter input or maps computed on request (View > Attention maps > Always "
      "computed on request) need less.");
}

void MainWindow::setSourceText(const QString& text) { m_source->setPlainText(text); }
void MainWindow::setTargetText(const QString& text) { m_target->setPlainText(text); }
QString MainWindow::sourceText() const { return m_source->toPlainText(); }

void MainWindow::onTextChanged() {
  if (!m_runner->model()) return;  // the load handler runs the text once the model is in
  m_runner->requestRun(m_source->toPlainText(), m_targetRow->isVisible() ? m_target->toPlainText() : QString());
}

void MainWindow::onModelLoaded(const QString& spec, std::shared_ptr<const Model> model) {
  m_model = std::move(model);
  m_modelSpec = spec;
  const ModelConfig& c = m_model->config();
  setWindowTitle(QString("Attention Atlas \u2014 %1").arg(spec));
  const bool encDec = c.architecture == Architecture::EncoderDecoder;
  m_targetRow->setVisible(encDec);
  if (encDec && m_target->toPlainText().isEmpty()) {
    const QSignalBlocker block(m_target);
    m_target->setPlainText(m_source->toPlainText());
  }
  m_targetChips->parentWidget()->parentWidget()->setVisible(encDec);
  for (const auto& w : m_model->warnings()) m_status->setText("Warning: " + QString::fromStdString(w));
  // Weights float32 cannot carry through the forward (core/analysis/weight_check.h): said once
  // here, kept in the status line after every run (property read by onRunFinished).
  QStringList weightWarnings;
  for (const auto& w : weight_warnings(*m_model)) weightWarnings << QString::fromStdString(w);
  setProperty("atlasWeightWarning", weightWarnings.isEmpty() ? QString() : weightWarnings.first());
  if (!weightWarnings.isEmpty()) {
    m_status->setText("Warning: " + weightWarnings.first());
    if (m_headless) {
      for (const auto& w : weightWarnings) std::fprintf(stderr, "attention-atlas: warning: %s\n", qPrintable(w));
    } else {
      auto* box = new QMessageBox(QMessageBox::Warning, "Very large weights",
                                  "The weights of " + spec + " are too large for float32 arithmetic.",
                                  QMessageBox::Ok, this);
      box->setInformativeText(weightWarnings.join("\n"));
      box->setAttribute(Qt::WA_DeleteOnClose);
      box->open();  // not modal to the app: the run goes on behind it
    }
  }
  if (!spec.startsWith("training:")) addRecent(spec);  // a snapshot cannot be reopened
  clearError();
  if (!m_image && is_patch_model(c)) {  // a ViT reads no text: start it on the built-in test card
    m_image = std::make_shared<const RgbImage>(sagan_synthetic_image(64));
    m_imageName = "built-in test card";
  }
  if (m_image) applyImageTokens();  // image input carries over to a pixel or patch model...
  if (!m_image)                      // ...and ends (back to the text) for any other model
    m_runner->runNow(m_source->toPlainText(), encDec ? m_target->toPlainText() : QString());
  emit modelReady(spec);
}

void MainWindow::onModelLoadFailed(const QString& spec, const QString& message) {
  if (m_headless) return failHeadless("cannot open model " + spec + ": " + message);
  m_status->setText("Could not open " + spec);
  showError(message);
  // The core's message names the file, key or tensor at fault: show it as it is.
  QMessageBox box(QMessageBox::Critical, "Cannot open model", "Could not open " + spec + ".",
                  QMessageBox::Ok, this);
  box.setInformativeText(message);
  box.exec();
}

void MainWindow::onRunFailed(const QString& message) {
  if (m_headless && !m_firstShown) return failHeadless(message);
  clearRun();  // the views must not keep showing an earlier input's (or model's) result
  showError(message);
  m_status->setText(QString("%1 · no result: %2").arg(m_modelSpec, message));
  emit runError(message);
}

void MainWindow::dropOverviews() {
  m_overviews.clear();
  for (auto& [key, job] : m_overviewJobs) job->deleteLater();  // a job still running: its result is dropped
  m_overviewJobs.clear();
}

void MainWindow::clearRun() {
  m_result.reset();
  m_trace.reset();
  dropOverviews();
  m_sourceChips->setTokens({});
  m_targetChips->setTokens({});
  refreshFamilies();
  m_positional->setTrace(nullptr);
  m_modelView->setTrace(nullptr, AttentionFamily{});
  m_heatmap->setData({});
  m_tokenView->setData({});
  updateVariantPanels();
}

void MainWindow::showError(const QString& message) {
  m_lastError = message;
  m_errorLabel->setText(message);
  m_errorLabel->show();
}

void MainWindow::clearError() {
  m_lastError.clear();
  m_errorLabel->hide();
}

void MainWindow::onRunFinished(std::shared_ptr<const RunResult> result, double ms) {
  clearError();
  m_result = std::move(result);
  m_trace = std::shared_ptr<const Trace>(m_result, &m_result->trace);  // shares the result's lifetime
  dropOverviews();  // the last trace's (heatmapOf)
  m_sourceChips->setTokens(m_trace->source_tokens);
  m_targetChips->setTokens(m_trace->target_tokens);
  refreshFamilies();
  m_positional->setTrace(m_trace);
  updateVariantPanels();
  updateModelView();
  updateViews();
  const int n = static_cast<int>(m_trace->source_tokens.size());
  QString text = QString("%1 \u00B7 %2 tokens").arg(m_modelSpec).arg(n);
  // A preset's weights come from a seed: its attention shows the architecture, not learning.
  if (m_modelSpec.startsWith("preset:")) text += " \u00B7 random weights (seeded, untrained)";
  if (!m_trace->target_tokens.empty()) text += QString(" \u2192 %1 target tokens").arg(m_trace->target_tokens.size());
  text += QString(" \u00B7 forward %1 ms").arg(ms, 0, 'f', 1);
  if (m_families.empty()) {
    const std::string why = m_model ? untraced_sparse_maps_reason(m_model->config(), n) : std::string();
    text += " \u00B7 " + (why.empty() ? QString("this model records no attention over tokens") : QString::fromStdString(why));
  }
  // NaN/Inf in the output: the views would show garbage without saying why.
  const std::vector<std::string> overflow = output_warnings(*m_result);
  if (!overflow.empty()) {
    text += " \u00B7 Warning: " + QString::fromStdString(overflow.front());
    if (m_headless) std::fprintf(stderr, "attention-atlas: warning: %s\n", overflow.front().c_str());
  }
  if (const QString w = property("atlasWeightWarning").toString(); !w.isEmpty()) text += " \u00B7 Warning: " + w;
  m_status->setText(text);
  updateBackendStatus();
  finishWorkspace();
  emit traceShown();
  if (!m_firstShown) {
    m_firstShown = true;
    emit firstRunShown();
  }
}

// The token search's matches (source positions) on the rows and columns of `map` that show
// source tokens (row i is token queries.begin + i; column j token keys.begin + j, Transformer-XL
// memory columns included: they are the earlier tokens themselves).
void MainWindow::markSearchMatches(HeatmapData& data, const AttentionMap& map) const {
  if (m_searchQueries.isEmpty() && m_searchKeys.isEmpty()) return;
  auto marks = [](const QVector<int>& positions, const TokenSpan& span, int count) {
    std::vector<uint8_t> out;
    if (span.side != TokenSide::Source || positions.isEmpty()) return out;
    out.assign(size_t(count), 0);
    for (int p : positions) {
      const int i = p - static_cast<int>(span.begin);
      if (i >= 0 && i < count) out[size_t(i)] = 1;
    }
    return out;
  };
  if (data.rows == static_cast<int>(map.queries.count)) data.rowMarks = marks(m_searchQueries, map.queries, data.rows);
  if (data.cols == static_cast<int>(map.keys.count)) data.colMarks = marks(m_searchKeys, map.keys, data.cols);
}

void MainWindow::refreshFamilies() {
  m_updatingSelectors = true;
  m_families = m_trace ? attentionFamilies(*m_trace) : std::vector<AttentionFamily>{};
  m_familyCombo->clear();
  int current = 0;
  for (size_t i = 0; i < m_families.size(); ++i) {
    m_familyCombo->addItem(m_families[i].label());
    if (m_families[i].stack == m_sel.stack && m_families[i].kind == m_sel.kind) current = static_cast<int>(i);
  }
  if (!m_families.empty()) {
    m_familyCombo->setCurrentIndex(current);
    const AttentionFamily& f = m_families[static_cast<size_t>(current)];
    m_sel.stack = f.stack;
    m_sel.kind = f.kind;
    // A Universal Transformer's spin counts steps from 1 as the trace names them (step1...).
    m_layerBase = f.steps ? 1 : 0;
    m_layerSpin->setPrefix(f.layerWord() + " ");
    m_layerSpin->setToolTip(f.steps ? "Universal Transformer step ( [ and ] )" : "Layer ( [ and ] )");
    m_sel.layer = std::clamp(m_sel.layer, 0, std::max(0, f.layers - 1));
    m_layerSpin->setRange(m_layerBase, m_layerBase + std::max(0, f.layers - 1));
    m_layerSpin->setValue(m_sel.layer + m_layerBase);
    m_sel.segment = std::clamp(m_sel.segment, 0, std::max(0, f.segments - 1));
    m_segmentSpin->setRange(0, std::max(0, f.segments - 1));
    m_segmentSpin->setValue(m_sel.segment);
    m_segmentSpin->setVisible(f.segments > 0);
  } else {
    m_segmentSpin->hide();
  }
  m_updatingSelectors = false;
  refreshHeadCombo();
}

void MainWindow::refreshHeadCombo() {
  m_updatingSelectors = true;
  m_headCombo->clear();
  if (const AttentionFamily* f = findFamily(m_families, m_sel.stack, m_sel.kind)) {
    for (int h = 0; h < f->heads; ++h) m_headCombo->addItem(headName(h), h);
    m_headCombo->addItem(headName(HeadMean), static_cast<int>(HeadMean));
    m_headCombo->addItem(headName(HeadMax), static_cast<int>(HeadMax));
    // Not across XL memory or cross-attention: the product needs the same tokens in every layer.
    if (m_trace && rolloutApplies(*m_trace, *f, m_sel.segment)) {
      m_headCombo->addItem(headName(HeadRollout), static_cast<int>(HeadRollout));
      m_headCombo->addItem(headName(HeadFlow), static_cast<int>(HeadFlow));
    }
    int idx = m_headCombo->findData(m_sel.head);
    if (idx < 0) {
      idx = 0;
      m_sel.head = 0;
    }
    m_headCombo->setCurrentIndex(idx);
  }
  m_updatingSelectors = false;
}

void MainWindow::updateModelView() {
  if (!m_trace) return;
  const AttentionFamily* f = findFamily(m_families, m_sel.stack, m_sel.kind);
  m_modelView->setTrace(m_trace, f ? *f : AttentionFamily{}, m_sel.segment);  // none: an empty grid
}

void MainWindow::setSelection(const AttentionSelection& sel) {
  const bool mapsChanged = sel.stack != m_sel.stack || sel.kind != m_sel.kind || sel.segment != m_sel.segment;
  m_sel = sel;
  if (mapsChanged) {
    refreshFamilies();  // layer and segment ranges and the head list (rollout) depend on them
    updateModelView();
  } else {
    m_updatingSelectors = true;
    m_layerSpin->setValue(m_sel.layer + m_layerBase);
    const int idx = m_headCombo->findData(m_sel.head);
    if (idx >= 0) m_headCombo->setCurrentIndex(idx);
    m_updatingSelectors = false;
  }
  updateViews();
}

void MainWindow::nextLayer(int delta) {
  AttentionSelection s = m_sel;
  s.layer = std::clamp(s.layer + delta, 0, m_layerSpin->maximum() - m_layerBase);
  if (s.layer != m_sel.layer) setSelection(s);
}

void MainWindow::nextHead(int delta) {
  const int n = m_headCombo->count();
  if (n == 0) return;
  const int idx = std::clamp(m_headCombo->currentIndex() + delta, 0, n - 1);
  AttentionSelection s = m_sel;
  s.head = m_headCombo->itemData(idx).toInt();
  if (s.head != m_sel.head) setSelection(s);
}

int MainWindow::rowOfQuery(int token) const {
  const int row = token < 0 ? -1 : token - m_queryBegin;
  return row < m_heatmap->data().rows ? row : -1;
}

void MainWindow::selectQuery(int token) {
  if (m_selectedQuery == token) return;
  m_selectedQuery = token;
  const QSignalBlocker a(m_heatmap), b(m_tokenView);
  const int row = rowOfQuery(token);
  m_heatmap->setPinnedRow(row);
  m_tokenView->setPinnedQuery(row);
  const bool decoderRows = m_sel.stack == "decoder" && m_trace && !m_trace->target_tokens.empty();
  m_sourceChips->setSelected(decoderRows ? -1 : token);
  m_targetChips->setSelected(decoderRows ? token : -1);
  if (m_imageView) m_imageView->setSelectedToken(token);
  pushPanelContext();
}

HeatmapData MainWindow::heatmapOf(const AttentionSelection& sel) {
  const AttentionMap* map = findAttentionMap(*m_trace, sel);
  if (!map || !heatmapIsOverview(*map, sel.head)) return attentionHeatmap(*m_trace, sel);
  const auto key = std::make_pair(map->array, sel.head);
  if (auto it = m_overviews.find(key); it != m_overviews.end()) return it->second;
  // An overview reads every weight of the map (0.5 s a head at 16k tokens, the mean of 4 heads
  // 2 s): computed on a worker thread, the views say so meanwhile and stay responsive.
  if (!m_overviewJobs.count(key)) {
    auto* job = new QFutureWatcher<HeatmapData>(this);
    m_overviewJobs[key] = job;
    connect(job, &QFutureWatcher<HeatmapData>::finished, this, [this, job, key] {
      job->deleteLater();
      auto it = m_overviewJobs.find(key);
      if (it == m_overviewJobs.end() || it->second != job) return;  // an earlier run's (dropOverviews)
      m_overviewJobs.erase(it);
      constexpr size_t kKept = 16;  // about 5 MB each
      if (m_overviews.size() >= kKept) m_overviews.clear();
      m_overviews[key] = job->result();
      updateViews();
      emit overviewShown();
    });
    job->setFuture(QtConcurrent::run([trace = m_trace, sel] {
      try {
        return attentionHeatmap(trace, sel);  // shares the trace: no copy of q and k per kept overview
      } catch (const std::exception& e) {  // said in the view, and kept so it is not retried
        HeatmapData failed;
        failed.emptyText = QString::fromStdString(e.what());
        return failed;
      }
    }));
  }
  HeatmapData pending;
  pending.title = QString::fromStdString(attention_map_title(*map));
  pending.emptyText = QString("computing an overview of %1 × %2 weights…")
                          .arg(map->queries.count)
                          .arg(map->keys.count);
  return pending;
}

void MainWindow::updateViews() {
  if (!m_trace) return;
  HeatmapData data;
  TokenLinesData lines;
  const AttentionMap* map = m_families.empty() ? nullptr : findAttentionMap(*m_trace, m_sel);
  m_queryBegin = map && map->queries.side != TokenSide::Positions ? static_cast<int>(map->queries.begin) : 0;
  try {
    // Value-weighted applies to one head; aggregates (mean, rollout, flow) stay as they are.
    const bool weighted = m_valueWeightedAction && m_valueWeightedAction->isChecked() && m_sel.head >= 0 && map &&
                          m_trace->find(map->array + ".value_norms");
    if (!m_families.empty()) data = weighted ? valueWeightedHeatmap(*m_trace, m_sel) : heatmapOf(m_sel);
    if (data.pooled()) {  // an overview of blocks: lines between blocks would read as tokens
      lines.title = QString("%1 × %2 tokens, computed on request: too many for token lines (zoom the heatmap)")
                        .arg(data.totalRows())
                        .arg(data.totalCols());
    } else if (!data.empty() && map && m_tokenHeads->currentIndex() == 1) {
      for (int h = 0; h < static_cast<int>(map->heads); ++h) {
        AttentionSelection s = m_sel;
        s.head = h;
        lines.heads.push_back(heatmapOf(s));
        lines.headIndex.push_back(h);
      }
      lines.title = QString::fromStdString(attention_map_title(*map)) + ", all heads";
    } else if (!data.empty()) {
      lines.heads.push_back(data);
      lines.headIndex.push_back(m_sel.head);
      lines.title = data.title;
    }
  } catch (const std::exception& e) {
    showError(QString::fromStdString(e.what()));
  }
  if (map && !data.empty()) markSearchMatches(data, *map);
  m_heatmap->setData(std::move(data));
  m_tokenView->setData(std::move(lines));
  m_modelView->setCurrent(m_sel.layer, m_sel.head);
  // Re-apply the linked query selection to the new matrix (it may have fewer rows, or be
  // another XL segment).
  const int q = m_selectedQuery;
  m_selectedQuery = -2;
  selectQuery(rowOfQuery(q) >= 0 ? q : -1);
  pushPanelContext();
}

ColorMapping MainWindow::currentMapping() const {
  ColorMapping m;
  m.colormap = static_cast<Colormap>(std::max(0, m_cmapCombo->currentIndex()));
  m.scale = m_scaleCombo->currentIndex() == 1 ? ColorScale::Log : ColorScale::Linear;
  m.normalization = m_normCombo->currentIndex() == 1 ? Normalization::Row : Normalization::Global;
  m.sharedScale = m_sharedScaleAction && m_sharedScaleAction->isChecked();
  return m;
}

void MainWindow::updateStyles() {
  HeatmapStyle s = m_dark ? HeatmapStyle::dark() : HeatmapStyle::light();
  // The application palette, not this widget's: a theme switch reaches widgets by a later event.
  s.background = QApplication::palette().color(QPalette::Base);
  s.foreground = QApplication::palette().color(QPalette::Text);
  s.fontSize = 11;
  s.mapping = currentMapping();
  m_heatmap->setStyle(s);
  m_modelView->setStyle(s);
  HeatmapStyle t = s;
  t.showTitle = false;
  m_tokenView->setStyle(t);
  m_positional->setStyle(s, m_dark);
  for (const auto& [dock, panel] : m_variantDocks) panel->setStyle(s, m_dark);
  if (m_sweepPanel) m_sweepPanel->setStyle(s, m_dark);
  if (m_comparePanel) m_comparePanel->setStyle(s, m_dark);
  if (m_searchPanel) m_searchPanel->setStyle(s, m_dark);
  if (m_patternView) m_patternView->setStyle(s);
}

}  // namespace atlas::ui
