// The variant panels' docks in the window: one dock per provider (variant_plots.h), shown when
// a run's trace first has the provider's arrays, fed the linked selection (layer, head, token)
// and sending picks back to it. Some panels need more than the default trace, and only while
// they are open: Transformer-XL the score terms (TraceOptions::scores), the logit lens the
// hidden states plus add_logit_lens on the worker, the ablation panel a second (ablated) run
// on the worker, the score-function grid the projected queries and keys (TraceOptions::qk).
#include <QAction>
#include <algorithm>
#include <QDockWidget>
#include <QMenu>

#include "ui/panels/ablation_controls.h"
#include "core/tensor/error.h"
#include "ui/main_window/main_window.h"
#include "ui/panels/panel_run_extras.h"
#include "ui/views/pattern_view.h"
#include "ui/main_window/run_controller.h"
#include "ui/tools/score_panel.h"
#include "ui/tools/compare_panel.h"
#include "ui/tools/corpus_panel.h"
#include "ui/tools/search_panel.h"
#include "ui/tools/sweep_panel.h"
#include "ui/views/token_chips.h"
#include "ui/panels/variant_panel.h"
#include "ui/panels/panel_registry.h"

namespace atlas::ui {

void MainWindow::buildVariantPanels() {
  m_patternView = new PatternView;
  m_patternDock = new QDockWidget("Pattern", this);
  m_patternDock->setObjectName("patternDock");
  m_patternDock->setWidget(m_patternView);
  addDockWidget(Qt::RightDockWidgetArea, m_patternDock);
  tabifyDockWidget(m_positionalDock, m_patternDock);
  m_modelDock->raise();
  m_viewMenu->insertAction(m_viewMenu->actions().value(3), m_patternDock->toggleViewAction());
  connect(m_patternView, &PatternView::queryPicked, this, &MainWindow::selectQuery);

  QMenu* panels = m_viewMenu->addMenu("&Variant panels");
  QDockWidget* first = nullptr;
  for (const PanelProvider& provider : variantProviders()) {
    auto* panel = new VariantPanel(provider);
    auto* dock = new QDockWidget(provider.title, this);
    dock->setObjectName(provider.id + "Dock");
    dock->setWidget(panel);
    addDockWidget(Qt::BottomDockWidgetArea, dock);
    if (first) tabifyDockWidget(first, dock);
    else first = dock;
    dock->hide();  // until a model has the arrays
    panels->addAction(dock->toggleViewAction());
    m_variantDocks.push_back({dock, panel});
    connect(panel, &VariantPanel::layerPicked, this, &MainWindow::selectLayer);
    connect(panel, &VariantPanel::headPicked, this, &MainWindow::selectHead);
    connect(panel, &VariantPanel::tokenPicked, this, &MainWindow::selectQuery);
    if (provider.needsScores || provider.needsQk || !provider.autoShow)
      connect(dock, &QDockWidget::visibilityChanged, this, [this] { updatePanelTraceOptions(); });
    if (provider.id == "ablation") {
      auto* controls = new AblationControls;
      controls->setObjectName("ablationControls");
      panel->setControls(controls);
      connect(controls, &AblationControls::applied, this, [this, controls](const AblationSpec& spec) {
        try {
          if (m_model) ablated_layers(m_model->config(), spec);  // bad indices: say so here, not per run
        } catch (const std::exception& e) {
          controls->setMessage(QString::fromStdString(e.what()));
          return;
        }
        m_ablation = std::make_shared<AblationSpec>(spec);
        updatePanelTraceOptions(true);
      });
      connect(controls, &AblationControls::cleared, this, [this] {
        m_ablation.reset();
        updatePanelTraceOptions(true);
      });
    }
  }

  // Score functions: a tool panel like the lens, shown when the user asks for it.
  m_scorePanel = new ScorePanel;
  m_scoreDock = new QDockWidget("Score functions", this);
  m_scoreDock->setObjectName("scoresDock");
  m_scoreDock->setWidget(m_scorePanel);
  addDockWidget(Qt::BottomDockWidgetArea, m_scoreDock);
  if (first) tabifyDockWidget(first, m_scoreDock);
  m_scoreDock->hide();
  panels->addAction(m_scoreDock->toggleViewAction());
  connect(m_scoreDock, &QDockWidget::visibilityChanged, this, [this] { updatePanelTraceOptions(); });

  // Tool panels with a worker or state of their own, opened by the user: ablation sweep
  // (sweep_panel.h), compare (compare_panel.h), token search (search_panel.h), corpus mode
  // (corpus_panel.h).
  auto toolDock = [&](QWidget* panel, const QString& title, const QString& name) {
    auto* dock = new QDockWidget(title, this);
    dock->setObjectName(name);
    dock->setWidget(panel);
    addDockWidget(Qt::BottomDockWidgetArea, dock);
    if (first) tabifyDockWidget(first, dock);
    dock->hide();
    panels->addAction(dock->toggleViewAction());
    return dock;
  };
  m_sweepPanel = new SweepPanel;
  m_sweepDock = toolDock(m_sweepPanel, "Ablation sweep", "sweepDock");
  m_comparePanel = new ComparePanel;
  m_compareDock = toolDock(m_comparePanel, "Compare", "compareDock");
  m_searchPanel = new TokenSearchPanel;
  m_searchDock = toolDock(m_searchPanel, "Token search", "searchDock");
  m_corpusPanel = new CorpusPanel;
  m_corpusDock = toolDock(m_corpusPanel, "Corpus", "corpusDock");

  // The sweep's rows are layers numbered over all stacks: a decoder layer of an encoder-decoder
  // model is row n_encoder + i.
  connect(m_sweepPanel, &SweepPanel::layerPicked, this, [this](int row) {
    AttentionSelection s = m_sel;
    s.layer = row;
    if (m_model && m_model->config().architecture == Architecture::EncoderDecoder) {
      const int encoder = static_cast<int>(m_model->config().n_layers);
      s.stack = row < encoder ? "encoder" : "decoder";
      s.kind = row < encoder ? "attn" : "self_attn";
      if (row >= encoder) s.layer = row - encoder;
    }
    setSelection(s);
  });
  connect(m_comparePanel, &ComparePanel::layerPicked, this, &MainWindow::selectLayer);
  connect(m_searchPanel, &TokenSearchPanel::layerPicked, this, &MainWindow::selectLayer);
  connect(m_sweepPanel, &SweepPanel::headPicked, this, &MainWindow::selectHead);
  connect(m_comparePanel, &ComparePanel::headPicked, this, &MainWindow::selectHead);
  connect(m_searchPanel, &TokenSearchPanel::headPicked, this, &MainWindow::selectHead);
  connect(m_comparePanel, &ComparePanel::tokenPicked, this, &MainWindow::selectQuery);
  // The matches are marked among the chips and on the heatmap's row and column labels.
  connect(m_searchPanel, &TokenSearchPanel::matchesChanged, this, [this](const QVector<int>& q, const QVector<int>& k) {
    if (!m_searchDock->isVisible()) return;  // a closed panel marks nothing
    m_sourceChips->setHighlighted(q, k);
    const bool changed = q != m_searchQueries || k != m_searchKeys;
    m_searchQueries = q;
    m_searchKeys = k;
    // During a run's panel update the run's own updateViews follows: no second repaint.
    if (changed && !m_updatingPanels) updateViews();
  });
  // A panel opened from the menu comes to the front of its tab group (it would otherwise open
  // behind the tab that was showing).
  for (QDockWidget* dock : findChildren<QDockWidget*>())
    connect(dock->toggleViewAction(), &QAction::triggered, dock, [dock](bool on) {
      if (on) dock->raise();
    });
  connect(m_searchDock, &QDockWidget::visibilityChanged, this, [this](bool visible) {
    if (visible) {
      m_searchPanel->setTrace(m_trace);
      return;
    }
    m_sourceChips->setHighlighted({}, {});
    m_searchQueries.clear();
    m_searchKeys.clear();
    updateViews();
  });
}

void MainWindow::selectLayer(int layer) {
  AttentionSelection s = m_sel;
  s.layer = layer;
  setSelection(s);
}

void MainWindow::selectHead(int head) {
  AttentionSelection s = m_sel;
  s.head = head;
  setSelection(s);
}

VariantPanel* MainWindow::variantPanel(const QString& id) const {
  for (const auto& [dock, panel] : m_variantDocks)
    if (panel->provider().id == id) return panel;
  return nullptr;
}

QDockWidget* MainWindow::variantDock(const QString& id) const {
  for (const auto& [dock, panel] : m_variantDocks)
    if (panel->provider().id == id) return dock;
  return nullptr;
}

void MainWindow::updateVariantPanels() {
  m_updatingPanels = true;
  m_patternView->setRun(m_model, m_trace);
  m_scorePanel->setRun(m_model, m_trace);
  m_sweepPanel->setRun(m_model, m_trace);
  m_comparePanel->setRun(m_model, m_trace);
  m_searchPanel->setTrace(m_trace);
  m_corpusPanel->setModel(m_model, m_modelSpec);
  for (const auto& [dock, panel] : m_variantDocks) {
    const bool before = panel->available();
    panel->setTrace(m_trace);
    // Appear when the arrays appear (a newly loaded model); a panel the user closed stays closed
    // for further runs of the same model.
    // The model's own panel comes to the front of its tab group with room to read its charts
    // (a screenshot shows what a user would see, so headless runs do the same).
    if (panel->available() && !before && panel->provider().autoShow) {
      dock->show();
      dock->raise();
      resizeDocks({dock}, {std::max(260, height() * 2 / 5)}, Qt::Vertical);
    }
    if (!panel->available() && before) dock->hide();
  }
  m_updatingPanels = false;
  pushPanelContext();
  updatePanelTraceOptions();
}

void MainWindow::pushPanelContext() {
  PanelContext ctx;
  ctx.layer = m_sel.layer;
  ctx.head = m_sel.head;  // aggregates (< 0) read as the mean over heads
  ctx.query = m_selectedQuery;
  if (m_model)
    ctx.tokenText = [model = m_model](int32_t id) { return QString::fromStdString(model->tokenizer().label(id)); };
  for (const auto& [dock, panel] : m_variantDocks) panel->setContext(ctx);
  m_patternView->setSelection(m_sel);
  m_scorePanel->setSelection(m_sel);
  m_comparePanel->setSelection(m_sel);
  m_corpusPanel->setSelection(m_sel.layer, m_sel.head);
}

// Scores and hidden states cost a copy of every [heads, L, L] / [L, d] matrix and the lens and
// the ablation a second pass, so each is done only while a panel that reads it is open;
// opening one re-runs once to fetch its arrays.
void MainWindow::updatePanelTraceOptions(bool force) {
  bool scores = false, lens = false, ablation = false, performer = false;
  for (const auto& [dock, panel] : m_variantDocks) {
    if (!dock->isVisible()) continue;
    const QString id = panel->provider().id;
    if (panel->provider().needsScores && panel->available()) scores = true;
    if (id == "lens" && panel->available()) lens = true;
    if (id == "ablation" && m_ablation) ablation = true;
    if (id == "performer" && m_model && m_model->config().performer()) performer = true;
  }
  // The score grid reads q and k (a recurrent seq2seq model: its encoder and decoder states),
  // and so does the query-key embedding.
  bool qk = m_scoreDock->isVisible();
  for (const auto& [dock, panel] : m_variantDocks)
    if (dock->isVisible() && panel->provider().needsQk) qk = true;
  const bool hidden = lens || (qk && m_model && m_model->config().rnn_seq2seq());
  RunOptions& opts = m_runner->runOptions();
  const bool valueNorms = m_valueWeightedAction && m_valueWeightedAction->isChecked();
  const bool changed = opts.trace.scores != scores || opts.trace.hidden != hidden || opts.trace.qk != qk ||
                       opts.trace.value_norms != valueNorms ||
                       m_postRunLens != lens ||
                       m_postRunAblation != ablation || m_postRunPerformer != performer;
  if (!changed && !force) return;
  opts.trace.scores = scores;
  opts.trace.hidden = hidden;
  opts.trace.qk = qk;
  opts.trace.value_norms = valueNorms;
  m_postRunLens = lens;
  m_postRunAblation = ablation;
  m_postRunPerformer = performer;
  PanelRunExtras extras;
  extras.lens = lens;
  extras.performer = performer;
  if (ablation) extras.ablation = m_ablation;
  if (!extras.any()) {
    m_runner->setPostRun({});
  } else {
    m_runner->setPostRun([extras](const Model& model, RunResult& result, const RunOptions& options) {
      addPanelRunExtras(extras, model, result, options);
    });
  }
  // Fetch the newly wanted arrays; a panel closing needs no run.
  if ((scores || lens || ablation || performer || qk || valueNorms || force) && m_trace && m_runner->model())
    onTextChanged();
}

}  // namespace atlas::ui
