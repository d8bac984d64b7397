#include "ui/main_window/panel_docks.h"

#include <QAction>
#include <QDockWidget>
#include <QMainWindow>
#include <QMenu>
#include <QScrollArea>
#include <algorithm>

#include "core/analysis/ablation.h"
#include "core/tensor/error.h"
#include "ui/main_window/main_window.h"
#include "ui/main_window/run_controller.h"
#include "ui/main_window/window_session.h"
#include "ui/panels/ablation_controls.h"
#include "ui/panels/panel_registry.h"
#include "ui/panels/panel_run_extras.h"
#include "ui/panels/variant_panel.h"
#include "ui/tools/compare_panel.h"
#include "ui/tools/corpus_panel.h"
#include "ui/tools/dla_panel.h"
#include "ui/tools/patching_panel.h"
#include "ui/tools/qk_decomposition_panel.h"
#include "ui/tools/score_panel.h"
#include "ui/tools/search_panel.h"
#include "ui/tools/sweep_panel.h"
#include "ui/tools/tool_panels.h"
#include "ui/views/heatmap_data.h"
#include "ui/views/pattern_view.h"

namespace atlas::ui {
namespace {


// A bottom panel's content, scrolled when the dock is lower than the panel's controls and plot
// need: the dock may then shrink (the main heatmap keeps kMainHeatmapMinimum) without squeezing
// the panel's text into elisions.
QWidget* scrollingPanel(QWidget* panel) {
  auto* scroll = new QScrollArea;
  scroll->setObjectName(panel->objectName() + "Scroll");
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setWidget(panel);
  return scroll;
}

// The height a bottom dock is given when it opens: two fifths of the window, or what its panel
// needs to show without scrolling when that is more (the main heatmap's minimum still caps it).
int readableDockHeight(const QMainWindow* window, const QDockWidget* dock) {
  int need = 0;
  if (const auto* scroll = qobject_cast<const QScrollArea*>(dock->widget()); scroll && scroll->widget())
    need = scroll->widget()->minimumSizeHint().height() + (dock->height() - scroll->height());
  return std::max({kBottomDockReadable, window->height() * 2 / 5, need});
}

// A bottom dock opened lower than its panel can be read at (first opened, or squeezed by a
// smaller window) is given readableDockHeight; the user's own larger sizes stay.
void giveRoomWhenShown(QMainWindow* window, QDockWidget* dock) {
  QObject::connect(dock, &QDockWidget::visibilityChanged, dock, [window, dock](bool visible) {
    if (visible && !dock->isFloating() && dock->height() < kBottomDockReadable)
      window->resizeDocks({dock}, {readableDockHeight(window, dock)}, Qt::Vertical);
  });
}

}  // namespace

PanelDocks::PanelDocks(QMainWindow* window, WindowSession* session, RunController* runner, QMenu* viewMenu,
                       QDockWidget* tabAfter)
    : QObject(window), m_window(window), m_session(session), m_runner(runner) {
  setObjectName("panelDocks");
  m_pattern = new PatternView;
  m_pattern->setObjectName("patternView");
  auto* patternDock = new QDockWidget("Pattern", window);
  patternDock->setObjectName("patternDock");
  patternDock->setWidget(m_pattern);
  window->addDockWidget(Qt::RightDockWidgetArea, patternDock);
  window->tabifyDockWidget(tabAfter, patternDock);
  viewMenu->insertAction(viewMenu->actions().value(3), patternDock->toggleViewAction());
  connect(m_pattern, &PatternView::queryPicked, session, &WindowSession::requestQuery);

  QMenu* panels = viewMenu->addMenu("&Variant panels");
  QDockWidget* first = nullptr;
  for (const PanelProvider& provider : variantProviders()) {
    auto* panel = new VariantPanel(provider);
    panel->setObjectName(provider.id + "Panel");
    auto* dock = new QDockWidget(provider.title, window);
    dock->setObjectName(provider.id + "Dock");
    dock->setWidget(scrollingPanel(panel));
    window->addDockWidget(Qt::BottomDockWidgetArea, dock);
    giveRoomWhenShown(window, dock);
    if (first) window->tabifyDockWidget(first, dock);
    else first = dock;
    dock->hide();  // until a model has the arrays
    panels->addAction(dock->toggleViewAction());
    m_variantDocks.push_back({dock, panel});
    connect(panel, &VariantPanel::layerPicked, session, &WindowSession::requestLayer);
    connect(panel, &VariantPanel::headPicked, session, &WindowSession::requestHead);
    connect(panel, &VariantPanel::tokenPicked, session, &WindowSession::requestQuery);
    if (provider.needsScores || provider.needsQk || !provider.autoShow)
      connect(dock, &QDockWidget::visibilityChanged, this, [this] { updateTraceOptions(); });
    if (provider.id == "ablation") {
      auto* controls = new AblationControls;
      controls->setObjectName("ablationControls");
      m_ablationControls = controls;
      panel->setControls(controls);
      connect(controls, &AblationControls::applied, this, [this, controls](const AblationSpec& spec) {
        try {
          if (const auto model = m_session->model()) ablated_layers(model->config(), spec);  // bad indices: said here, not per run
        } catch (const std::exception& e) {
          controls->setMessage(QString::fromStdString(e.what()));
          return;
        }
        m_ablation = std::make_shared<AblationSpec>(spec);
        updateTraceOptions(true);
      });
      connect(controls, &AblationControls::cleared, this, [this] {
        m_ablation.reset();
        updateTraceOptions(true);
      });
    }
  }

  // Tool panels with a worker or state of their own, opened by the user (ui/tools/tool_panels.h).
  QDockWidget* qkDock = nullptr;
  for (const ToolPanelEntry& tool : toolPanels()) {
    QWidget* panel = tool.create();
    panel->setObjectName(tool.panelName);
    auto* dock = new QDockWidget(tool.title, window);
    dock->setObjectName(tool.dockName);
    dock->setWidget(scrollingPanel(panel));
    window->addDockWidget(Qt::BottomDockWidgetArea, dock);
    giveRoomWhenShown(window, dock);
    if (first) window->tabifyDockWidget(first, dock);
    dock->hide();
    panels->addAction(dock->toggleViewAction());
    if (tool.id == "scores") m_scoreDock = dock;
    if (tool.id == "search") m_searchDock = dock;
    if (tool.id == "qk") qkDock = dock;
  }
  m_scores = window->findChild<ScorePanel*>("scorePanel");
  m_sweep = window->findChild<SweepPanel*>("sweepPanel");
  m_patching = window->findChild<PatchingPanel*>("patchingPanel");
  m_dla = window->findChild<DlaPanel*>("dlaPanel");
  m_qk = window->findChild<QkDecompositionPanel*>("qkDecompositionPanel");
  m_compare = window->findChild<ComparePanel*>("comparePanel");
  m_search = window->findChild<TokenSearchPanel*>("searchPanel");
  m_corpus = window->findChild<CorpusPanel*>("corpusPanel");
  if (!m_scores || !m_sweep || !m_patching || !m_dla || !m_qk || !m_compare || !m_search || !m_corpus || !m_scoreDock ||
      !m_searchDock || !qkDock)
    throw AtlasError("the tool panels' list (ui/tools/tool_panels.cpp) lacks a panel the window wires");
  connect(m_scoreDock, &QDockWidget::visibilityChanged, this, [this] { updateTraceOptions(); });
  // Its matrix has a row and a column per earlier component: opened first, the dock takes half
  // the window's height so that their names can be read (the user's later sizes stay).
  connect(qkDock, &QDockWidget::visibilityChanged, this, [this, qkDock, sized = false](bool visible) mutable {
    if (!visible || sized || qkDock->isFloating()) return;
    sized = true;
    m_window->resizeDocks({qkDock}, {std::max(360, m_window->height() / 2)}, Qt::Vertical);
  });

  // The sweep's rows are layers numbered over all stacks: a decoder layer of an encoder-decoder
  // model is row n_encoder + i.
  connect(m_sweep, &SweepPanel::layerPicked, this, [this](int row) {
    AttentionSelection s = m_session->selection();
    s.layer = row;
    const auto model = m_session->model();
    if (model && model->config().architecture == Architecture::EncoderDecoder) {
      const int encoder = static_cast<int>(model->config().n_layers);
      s.stack = row < encoder ? "encoder" : "decoder";
      s.kind = row < encoder ? "attn" : "self_attn";
      if (row >= encoder) s.layer = row - encoder;
    }
    m_session->requestSelection(s);
  });
  connect(m_compare, &ComparePanel::layerPicked, session, &WindowSession::requestLayer);
  // Patching and attribution refuse encoder-decoder models: their rows are the one stack's layers.
  connect(m_patching, &PatchingPanel::layerPicked, session, &WindowSession::requestLayer);
  connect(m_patching, &PatchingPanel::headPicked, session, &WindowSession::requestHead);
  connect(m_patching, &PatchingPanel::tokenPicked, session, &WindowSession::requestQuery);
  connect(m_dla, &DlaPanel::layerPicked, session, &WindowSession::requestLayer);
  connect(m_dla, &DlaPanel::headPicked, session, &WindowSession::requestHead);
  connect(m_search, &TokenSearchPanel::layerPicked, session, &WindowSession::requestLayer);
  connect(m_sweep, &SweepPanel::headPicked, session, &WindowSession::requestHead);
  connect(m_compare, &ComparePanel::headPicked, session, &WindowSession::requestHead);
  connect(m_search, &TokenSearchPanel::headPicked, session, &WindowSession::requestHead);
  connect(m_compare, &ComparePanel::tokenPicked, session, &WindowSession::requestQuery);
  // The matches are marked among the chips and on the heatmap's row and column labels.
  connect(m_search, &TokenSearchPanel::matchesChanged, this, [this](const QVector<int>& q, const QVector<int>& k) {
    if (!m_searchDock->isVisible()) return;  // a closed panel marks nothing
    emit searchMatchesChanged(q, k, !m_updating);
  });
  connect(m_searchDock, &QDockWidget::visibilityChanged, this, [this](bool visible) {
    if (visible) {
      m_search->setTrace(m_session->trace());
      return;
    }
    emit searchMatchesChanged({}, {}, true);
  });
  // A panel opened from the menu comes to the front of its tab group (it would otherwise open
  // behind the tab that was showing).
  for (QDockWidget* dock : window->findChildren<QDockWidget*>())
    connect(dock->toggleViewAction(), &QAction::triggered, dock, [dock](bool on) {
      if (on) dock->raise();
    });
  connect(session, &WindowSession::runShown, this, &PanelDocks::showRun);
  connect(session, &WindowSession::selectionShown, this, &PanelDocks::followSelection);
}

void PanelDocks::showRun() {
  const auto model = m_session->model();
  const auto trace = m_session->trace();
  m_updating = true;
  m_pattern->setRun(model, trace);
  m_scores->setRun(model, trace);
  m_sweep->setRun(model, trace);
  m_patching->setRun(model, trace);
  m_dla->setRun(model, trace);
  m_qk->setRun(model, trace);
  m_compare->setRun(model, trace);
  m_search->setTrace(trace);
  m_corpus->setModel(model, m_session->modelSpec());
  std::function<QString(int32_t)> tokenText;  // the vocabulary of the model that made this trace
  if (model) tokenText = [model](int32_t id) { return vocabularyLabel(*model, id); };
  for (const auto& [dock, panel] : m_variantDocks) {
    const bool before = panel->available();
    panel->setTrace(trace, tokenText);
    // Appear when the arrays appear (a newly loaded model); a panel the user closed stays closed
    // for further runs of the same model.
    // The model's own panel comes to the front of its tab group with room to read its charts
    // (a screenshot shows what a user would see, so headless runs do the same).
    if (panel->available() && !before && panel->provider().autoShow) {
      dock->show();
      dock->raise();
      m_window->resizeDocks({dock}, {readableDockHeight(m_window, dock)}, Qt::Vertical);
    }
    if (!panel->available() && before) dock->hide();
  }
  m_updating = false;
  followSelection();
  updateTraceOptions();
}

void PanelDocks::followSelection() {
  const AttentionSelection sel = m_session->selection();
  PanelContext ctx;
  ctx.layer = sel.layer;
  ctx.head = sel.head;  // aggregates (< 0) read as the mean over heads
  ctx.query = m_session->query();
  ctx.segment = sel.segment;  // the XL panel shows the main view's segment
  for (const auto& [dock, panel] : m_variantDocks) panel->setContext(ctx);
  m_pattern->setSelection(sel);
  m_scores->setSelection(sel);
  m_compare->setSelection(sel);
  m_patching->setSelection(sel);
  m_qk->setSelection(sel);
  m_qk->setCell(m_session->cellQuery(), m_session->cellKey());
  m_corpus->setSelection(sel.layer, sel.head);
}

void PanelDocks::setStyle(const HeatmapStyle& style, bool dark) {
  for (const auto& [dock, panel] : m_variantDocks) panel->setStyle(style, dark);
  m_sweep->setStyle(style, dark);
  m_patching->setStyle(style, dark);
  m_dla->setStyle(style, dark);
  m_qk->setStyle(style, dark);
  m_compare->setStyle(style, dark);
  m_search->setStyle(style, dark);
  m_pattern->setStyle(style);
}

void PanelDocks::detachTools() {
  const auto model = m_session->model();
  m_scores->setRun(model, nullptr);
  m_sweep->setRun(model, nullptr);
  m_patching->setRun(model, nullptr);
  m_dla->setRun(model, nullptr);
  m_qk->setRun(model, nullptr);
  m_compare->setRun(model, nullptr);
  m_search->setTrace(nullptr);
}

QJsonObject PanelDocks::ablationState() const {
  if (!m_ablationControls) return {};
  QJsonObject o = m_ablationControls->inputs();
  const bool typed = !o["drop_layers"].toString().isEmpty() || !o["drop_heads"].toString().isEmpty() ||
                     o["layerdrop_rate"].toDouble() != 0.0;
  if (!typed && !m_ablation) return {};
  o["compared"] = m_ablation != nullptr;
  return o;
}

QString PanelDocks::restoreAblationState(const QJsonObject& state) {
  if (!m_ablationControls) return {};
  try {
    if (state.contains("compared") && !state["compared"].isBool()) throw AtlasError("\"compared\" must be true or false");
    m_ablationControls->setInputs(state);
  } catch (const AtlasError& e) {
    const QString why = QString("The workspace's ablation panel (tools.ablation) was not restored: %1").arg(e.what());
    m_ablationControls->setMessage(why);
    return why;
  }
  if (state["compared"].toBool()) m_ablationControls->apply();  // a spec the model refuses is said in the panel
  return {};
}

void PanelDocks::setValueNorms(bool on) {
  m_valueNorms = on;
  updateTraceOptions(true);
}

// Scores and hidden states cost a copy of every [heads, L, L] / [L, d] matrix and the lens and
// the ablation a second pass, so each is done only while a panel that reads it is open;
// opening one re-runs once to fetch its arrays.
void PanelDocks::updateTraceOptions(bool force) {
  const auto model = m_session->model();
  bool scores = false, lens = false, ablation = false, performer = false;
  for (const auto& [dock, panel] : m_variantDocks) {
    if (!dock->isVisible()) continue;
    const QString id = panel->provider().id;
    if (panel->provider().needsScores && panel->available()) scores = true;
    if (id == "lens" && panel->available()) lens = true;
    if (id == "ablation" && m_ablation) ablation = true;
    if (id == "performer" && model && model->config().performer()) performer = true;
  }
  // The score grid reads q and k (a recurrent seq2seq model: its encoder and decoder states),
  // and so does the query-key embedding.
  bool qk = m_scoreDock->isVisible();
  for (const auto& [dock, panel] : m_variantDocks)
    if (dock->isVisible() && panel->provider().needsQk) qk = true;
  const bool hidden = lens || (qk && model && model->config().rnn_seq2seq());
  RunOptions& opts = m_runner->runOptions();
  const bool changed = opts.trace.scores != scores || opts.trace.hidden != hidden || opts.trace.qk != qk ||
                       opts.trace.value_norms != m_valueNorms || m_postRunLens != lens ||
                       m_postRunAblation != ablation || m_postRunPerformer != performer;
  if (!changed && !force) return;
  opts.trace.scores = scores;
  opts.trace.hidden = hidden;
  opts.trace.qk = qk;
  opts.trace.value_norms = m_valueNorms;
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
  if ((scores || lens || ablation || performer || qk || m_valueNorms || force) && m_session->trace() && m_runner->model())
    m_session->requestRun();
}

}  // namespace atlas::ui
