#include "ui/main_window/main_window.h"

#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QDockWidget>
#include <QLabel>
#include <QMessageBox>
#include <QStatusBar>
#include <QVBoxLayout>
#include <cstdio>
#include <utility>

#include "core/analysis/weight_check.h"
#include "core/model/memory_budget.h"
#include "ui/main_window/backend_status.h"
#include "ui/main_window/default_input.h"
#include "ui/main_window/figure_actions.h"
#include "ui/main_window/image_mode.h"
#include "ui/main_window/input_area.h"
#include "ui/main_window/panel_docks.h"
#include "ui/main_window/recent_models.h"
#include "ui/main_window/run_controller.h"
#include "ui/main_window/run_status.h"
#include "ui/main_window/selector_bar.h"
#include "ui/main_window/window_session.h"
#include "core/analysis/attention_flow.h"
#include "ui/views/aggregate_heatmaps.h"
#include "ui/views/heatmap_view.h"
#include "ui/views/model_view.h"
#include "ui/views/overview_cache.h"
#include "ui/views/positional_view.h"
#include "ui/views/token_view.h"

namespace atlas::ui {

namespace {

// Headless (--screenshot, --quit-after-run): the message on stderr and exit code 1.
void failHeadless(const QString& message) {
  std::fprintf(stderr, "attention-atlas: %s\n", message.toLocal8Bit().constData());
  QCoreApplication::exit(1);
}

// The token search's matches (source positions) on the rows and columns of `map` that show
// source tokens (row i is token queries.begin + i; column j token keys.begin + j, Transformer-XL
// memory columns included: they are the earlier tokens themselves).
void markSearchMatches(HeatmapData& data, const AttentionMap& map, const QVector<int>& queries,
                       const QVector<int>& keys) {
  if (queries.isEmpty() && keys.isEmpty()) return;
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
  if (data.rows == static_cast<int>(map.queries.count)) data.rowMarks = marks(queries, map.queries, data.rows);
  if (data.cols == static_cast<int>(map.keys.count)) data.colMarks = marks(keys, map.keys, data.cols);
}

}  // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setWindowTitle("Attention Atlas");
  setAcceptDrops(true);
  m_session = new WindowSession(this);
  m_session->setObjectName("windowSession");
  m_runner = new RunController(this);
  m_runner->setObjectName("runController");
  m_overviews = new OverviewCache(this);
  buildUi();
  buildMenus();  // also makes the parts that own menus (panel docks, recent models, backend)
  connectParts();
  updateStyles();
}

MainWindow::~MainWindow() {
  // QWidget's destructor closes the window after our members are gone; a dock hidden then (the
  // token search's) must not reach back into them (updateViews on freed views).
  if (m_panels) disconnect(m_panels, nullptr, this, nullptr);
}

void MainWindow::buildUi() {
  auto* central = new QWidget;
  auto* v = new QVBoxLayout(central);
  v->setContentsMargins(8, 6, 8, 4);
  v->setSpacing(4);
  m_input = new InputArea;
  v->addWidget(m_input);
  m_errorBar = new QLabel;
  m_errorBar->setObjectName("errorBar");
  m_errorBar->setWordWrap(true);
  m_errorBar->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_errorBar->setStyleSheet("QLabel { color: white; background: #b3261e; padding: 4px; border-radius: 3px; }");
  m_errorBar->hide();
  v->addWidget(m_errorBar);
  m_selectors = new SelectorBar;
  v->addWidget(m_selectors);
  m_heatmap = new HeatmapView;
  m_heatmap->setObjectName("heatmap");
  m_heatmap->setToolTip(QString());
  m_heatmap->setMinimumSize(kMainHeatmapMinimum);
  v->addWidget(m_heatmap, 1);
  setCentralWidget(central);

  m_grid = new ModelView;
  m_grid->setObjectName("modelGrid");
  m_gridDock = new QDockWidget("Model: layers \u00D7 heads", this);
  m_gridDock->setObjectName("modelDock");
  m_gridDock->setWidget(m_grid);
  addDockWidget(Qt::RightDockWidgetArea, m_gridDock);

  auto* tokenPanel = new QWidget;
  auto* tl = new QVBoxLayout(tokenPanel);
  tl->setContentsMargins(2, 2, 2, 2);
  m_tokenHeads = new QComboBox;
  m_tokenHeads->setObjectName("tokenHeads");
  m_tokenHeads->addItems({"Selected head", "All heads of the layer"});
  tl->addWidget(m_tokenHeads);
  m_tokenView = new TokenView;
  m_tokenView->setObjectName("tokenView");
  tl->addWidget(m_tokenView, 1);
  m_tokenDock = new QDockWidget("Tokens", this);
  m_tokenDock->setObjectName("tokenDock");
  m_tokenDock->setWidget(tokenPanel);
  addDockWidget(Qt::RightDockWidgetArea, m_tokenDock);
  tabifyDockWidget(m_gridDock, m_tokenDock);

  m_positional = new PositionalView;
  m_positional->setObjectName("positionalView");
  m_positionalDock = new QDockWidget("Positional encoding", this);
  m_positionalDock->setObjectName("positionalDock");
  m_positionalDock->setWidget(m_positional);
  addDockWidget(Qt::RightDockWidgetArea, m_positionalDock);
  tabifyDockWidget(m_tokenDock, m_positionalDock);
  m_gridDock->raise();
  resizeDocks({m_gridDock}, {420}, Qt::Horizontal);

  m_status = new RunStatus(statusBar(), m_runner, this);
  m_image = new ImageMode(this, m_session, m_runner, m_input);
  m_figures = new FigureActions(this, m_session, m_heatmap, m_grid, m_tokenView, [this] {
    ColorMapping m = m_selectors->mapping();
    m.sharedScale = m_sharedScale && m_sharedScale->isChecked();
    return m;
  });
}

// What the parts ask of the window, and what it does when a model or a run arrives.
void MainWindow::connectParts() {
  connect(m_input, &InputArea::sourceEdited, this, [this] {
    if (m_image->active()) m_image->leave();  // typing takes the input back from the image
    runInput();
  });
  connect(m_input, &InputArea::targetEdited, this, &MainWindow::runInput);
  // The heatmap and token view pin rows of the map on screen; an XL segment's rows start at
  // its first token.
  auto pinRow = [this](int row) { selectQuery(row < 0 ? -1 : row + m_queryBegin); };
  connect(m_heatmap, &HeatmapView::rowPinned, this, pinRow);
  // A clicked cell is the one the QK decomposition splits (qk_decomposition_panel.h).
  connect(m_heatmap, &HeatmapView::cellClicked, this,
          [this](int row, int col) { m_session->setCell(row + m_queryBegin, col + m_keyBegin); });
  connect(m_tokenView, &TokenView::queryPinned, this, pinRow);
  // Source chips are the query rows unless the view shows the decoder side.
  connect(m_input, &InputArea::sourceTokenClicked, this, [this](int i) {
    const auto trace = m_session->trace();
    if (m_session->selection().stack == "decoder" && trace && !trace->target_tokens.empty()) return;
    selectQuery(i);
  });
  connect(m_input, &InputArea::targetTokenClicked, this, [this](int i) {
    if (m_session->selection().stack == "decoder") selectQuery(i);
  });
  connect(m_grid, &ModelView::headClicked, this, [this](int layer, int head) {
    AttentionSelection s = selection();
    s.layer = layer;
    s.head = head;
    setSelection(s);
  });
  connect(m_tokenHeads, &QComboBox::currentIndexChanged, this, &MainWindow::updateViews);
  connect(m_selectors, &SelectorBar::edited, this, &MainWindow::setSelection);
  connect(m_selectors, &SelectorBar::mappingChanged, this, &MainWindow::updateStyles);
  connect(m_overviews, &OverviewCache::ready, this, [this] {
    updateViews();
    emit overviewShown();
  });

  connect(m_session, &WindowSession::selectionRequested, this, &MainWindow::setSelection);
  connect(m_session, &WindowSession::queryRequested, this, &MainWindow::selectQuery);
  connect(m_session, &WindowSession::runRequested, this, &MainWindow::runInput);
  connect(m_panels, &PanelDocks::searchMatchesChanged, this,
          [this](const QVector<int>& q, const QVector<int>& k, bool showNow) {
            m_input->setSearchMatches(q, k);
            const bool changed = q != m_searchQueries || k != m_searchKeys;
            m_searchQueries = q;
            m_searchKeys = k;
            if (changed && showNow) updateViews();
          });
  connect(m_image, &ImageMode::failed, this, &MainWindow::showError);
  connect(m_image, &ImageMode::statusChanged, m_status, &RunStatus::setText);
  connect(m_image, &ImageMode::applied, this, [this] { showError({}); });
  connect(m_figures, &FigureActions::failed, this, &MainWindow::showError);
  connect(m_backend, &BackendStatus::rerunRequested, this, [this] {
    if (m_session->trace()) runInput();
  });

  connect(m_runner, &RunController::modelLoaded, this, &MainWindow::onModelLoaded);
  connect(m_runner, &RunController::modelLoadFailed, this, [this](const QString& spec, const QString& message) {
    if (m_headless) return failHeadless("cannot open model " + spec + ": " + message);
    m_status->setText("Could not open " + spec);
    showError(message);
    // The core's message names the file, key or tensor at fault: show it as it is.
    QMessageBox box(QMessageBox::Critical, "Cannot open model", "Could not open " + spec + ".", QMessageBox::Ok, this);
    box.setInformativeText(message);
    box.exec();
  });
  connect(m_runner, &RunController::modelLoadCancelled, this, [this](const QString& spec) {
    const auto model = m_session->model();
    m_status->setText("Opening " + spec + " cancelled" +
                      (model ? "; " + QString::fromStdString(model->config().name) + " is still open" : QString()));
  });
  connect(m_runner, &RunController::runFinished, this, &MainWindow::onRunFinished);
  connect(m_runner, &RunController::runFailed, this, &MainWindow::onRunFailed);
}

void MainWindow::loadModel(const QString& spec) { m_runner->loadModel(spec); }

void MainWindow::openDemo(const QString& name) {
  setSourceText(defaultTextFor("demo:" + name));
  loadModel("demo:" + name);
}

void MainWindow::setSourceText(const QString& text) { m_input->setSource(text); }
void MainWindow::setTargetText(const QString& text) { m_input->setTarget(text); }

bool MainWindow::setImage(const QImage& image, const QString& name) {
  if (m_image->set(image, name)) return true;
  showError(m_image->error());
  return false;
}

bool MainWindow::openImage(const QString& path) {
  if (m_image->open(path)) return true;
  showError(m_image->error());
  return false;
}

std::shared_ptr<const Trace> MainWindow::trace() const { return m_session->trace(); }
QString MainWindow::modelSpec() const { return m_session->modelSpec(); }
std::shared_ptr<const Model> MainWindow::model() const { return m_session->model(); }
AttentionSelection MainWindow::selection() const { return m_session->selection(); }

void MainWindow::runInput() {
  if (!m_runner->model()) return;  // the load handler runs the text once the model is in
  m_runner->requestRun(m_input->source(), m_input->targetShown() ? m_input->target() : QString());
}

void MainWindow::onModelLoaded(const QString& spec, std::shared_ptr<const Model> model) {
  m_session->setModel(model, spec);
  const ModelConfig& c = model->config();
  setWindowTitle(QString("Attention Atlas \u2014 %1").arg(spec));
  const bool encDec = c.architecture == Architecture::EncoderDecoder;
  m_input->setTargetShown(encDec);
  if (encDec && m_input->target().isEmpty()) m_input->setTarget(m_input->source(), /*quiet=*/true);
  for (const auto& w : model->warnings()) m_status->setText("Warning: " + QString::fromStdString(w));
  // Weights float32 cannot carry through the forward (core/analysis/weight_check.h): said once
  // here, kept in the status line after every run.
  QStringList weightWarnings;
  for (const auto& w : weight_warnings(*model)) weightWarnings << QString::fromStdString(w);
  m_weightWarning = weightWarnings.isEmpty() ? QString() : weightWarnings.first();
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
  if (!spec.startsWith("training:")) m_recent->add(spec);  // a snapshot cannot be reopened
  showError({});
  restoreWorkspaceTools(spec);  // a workspace being opened: its tools wait for this model's run
  // Image input carries over to a pixel or patch model and ends (back to the text) for any other.
  if (!m_image->modelLoaded()) m_runner->runNow(m_input->source(), encDec ? m_input->target() : QString());
  emit modelReady(spec);
}

void MainWindow::onRunFailed(const QString& message) {
  if (m_headless && !m_firstShown) return failHeadless(message);
  // The views must not keep showing an earlier input's (or model's) result.
  m_overviews->clear();
  m_input->setTokens({}, {});
  m_session->setRun(nullptr, m_selectors->setTrace(nullptr, selection()));
  m_positional->setTrace(nullptr);
  m_grid->setTrace(nullptr, AttentionFamily{});
  m_heatmap->setData({});
  m_tokenView->setData({});
  showError(message);
  m_status->setText(QString("%1 · no result: %2").arg(modelSpec(), message));
  emit runError(message);
}

void MainWindow::showError(const QString& message) {
  m_lastError = message;
  m_errorBar->setText(message);
  m_errorBar->setVisible(!message.isEmpty());
}

void MainWindow::onRunFinished(std::shared_ptr<const RunResult> result, double ms) {
  showError({});
  m_overviews->clear();  // the last trace's
  const auto trace = std::shared_ptr<const Trace>(result, &result->trace);  // shares the result's lifetime
  m_input->setTokens(trace->source_tokens, trace->target_tokens);
  const AttentionSelection sel = m_selectors->setTrace(trace, selection());
  m_positional->setTrace(trace);
  m_session->setRun(result, sel);  // the panels follow
  const AttentionFamily* f = m_selectors->family(sel);
  m_grid->setTrace(trace, f ? *f : AttentionFamily{}, sel.segment);  // none: an empty grid
  updateViews();
  const int n = static_cast<int>(trace->source_tokens.size());
  QString text = QString("%1 \u00B7 %2 tokens").arg(modelSpec()).arg(n);
  // A preset's weights come from a seed: its attention shows the architecture, not learning.
  if (modelSpec().startsWith("preset:")) text += " \u00B7 random weights (seeded, untrained)";
  if (!trace->target_tokens.empty()) text += QString(" \u2192 %1 target tokens").arg(trace->target_tokens.size());
  text += QString(" \u00B7 forward %1 ms").arg(ms, 0, 'f', 1);
  if (m_selectors->families().empty()) {
    const auto model = m_session->model();
    const std::string why = model ? untraced_sparse_maps_reason(model->config(), n) : std::string();
    text += " \u00B7 " + (why.empty() ? QString("this model records no attention over tokens") : QString::fromStdString(why));
  }
  // NaN/Inf in the output: the views would show garbage without saying why.
  const std::vector<std::string> overflow = output_warnings(*result);
  if (!overflow.empty()) {
    text += " \u00B7 Warning: " + QString::fromStdString(overflow.front());
    if (m_headless) std::fprintf(stderr, "attention-atlas: warning: %s\n", overflow.front().c_str());
  }
  if (!m_weightWarning.isEmpty()) text += " \u00B7 Warning: " + m_weightWarning;
  if (!m_workspaceNote.isEmpty()) text += " \u00B7 " + std::exchange(m_workspaceNote, QString());
  m_status->setText(text);
  m_backend->refresh();
  finishWorkspace();
  emit traceShown();
  if (!m_firstShown) {
    m_firstShown = true;
    emit firstRunShown();
  }
}

void MainWindow::setSelection(const AttentionSelection& sel) {
  const AttentionSelection shown = selection();
  const bool mapsChanged = sel.stack != shown.stack || sel.kind != shown.kind || sel.segment != shown.segment;
  const AttentionSelection s = m_selectors->show(sel, shown);
  m_session->setSelection(s);
  if (mapsChanged && m_session->trace()) {
    const AttentionFamily* f = m_selectors->family(s);
    m_grid->setTrace(m_session->trace(), f ? *f : AttentionFamily{}, s.segment);
  }
  updateViews();
}

void MainWindow::selectQuery(int token) {
  const int row = token < 0 ? -1 : token - m_queryBegin;
  const int shownRow = row < m_heatmap->data().rows ? row : -1;
  {
    const QSignalBlocker a(m_heatmap), b(m_tokenView);
    m_heatmap->setPinnedRow(shownRow);
    m_tokenView->setPinnedQuery(shownRow);
  }
  const auto trace = m_session->trace();
  m_input->selectToken(token, selection().stack == "decoder" && trace && !trace->target_tokens.empty());
  m_session->setQuery(token);  // the panels and the image view follow
  if (m_flowRow != -2 && row != m_flowRow) updateViews();  // a long input's flow: that row now
}

void MainWindow::updateViews() {
  const auto trace = m_session->trace();
  if (!trace) return;
  AttentionSelection sel = selection();
  HeatmapData data;
  TokenLinesData lines;
  const AttentionMap* map = m_selectors->families().empty() ? nullptr : findAttentionMap(*trace, sel);
  m_queryBegin = map && map->queries.side != TokenSide::Positions ? static_cast<int>(map->queries.begin) : 0;
  m_keyBegin = map && map->keys.side != TokenSide::Positions ? static_cast<int>(map->keys.begin) : 0;
  m_flowRow = -2;
  if (sel.head == HeadFlow && map && map->queries.count > kAttentionFlowFullLimit) {
    const int row = m_session->query() < 0 ? -1 : m_session->query() - m_queryBegin;
    m_flowRow = sel.query = row < 0 || row >= map->queries.count ? -1 : row;
  }
  try {
    // Value-weighted applies to one head; aggregates (mean, rollout, flow) stay as they are.
    const bool weighted = m_valueWeighted && m_valueWeighted->isChecked() && sel.head >= 0 && map &&
                          trace->find(map->companions.value_norms);
    if (!m_selectors->families().empty())
      data = weighted ? valueWeightedHeatmap(*trace, sel) : m_overviews->heatmap(trace, sel);
    if (data.pooled()) {  // an overview of blocks: lines between blocks would read as tokens
      lines.title = QString("%1 × %2 tokens, computed on request: too many for token lines (zoom the heatmap)")
                        .arg(data.totalRows())
                        .arg(data.totalCols());
    } else if (!data.empty() && map && m_tokenHeads->currentIndex() == 1) {
      for (int h = 0; h < static_cast<int>(map->heads); ++h) {
        AttentionSelection s = sel;
        s.head = h;
        lines.heads.push_back(m_overviews->heatmap(trace, s));
        lines.headIndex.push_back(h);
      }
      lines.title = QString::fromStdString(attention_map_title(*map)) + ", all heads";
    } else if (!data.empty()) {
      lines.heads.push_back(data);
      lines.headIndex.push_back(sel.head);
      lines.title = data.title;
    }
  } catch (const std::exception& e) {
    showError(QString::fromStdString(e.what()));
  }
  if (map && !data.empty()) markSearchMatches(data, *map, m_searchQueries, m_searchKeys);
  m_heatmap->setData(std::move(data));
  m_tokenView->setData(std::move(lines));
  m_grid->setCurrent(sel.layer, sel.head);
  // Re-apply the linked query selection to the new matrix (it may have fewer rows, or be
  // another XL segment).
  const int q = m_session->query();
  const int row = q < 0 ? -1 : q - m_queryBegin;
  selectQuery(row >= 0 && row < m_heatmap->data().rows ? q : -1);
}

void MainWindow::updateStyles() {
  HeatmapStyle s = m_dark ? HeatmapStyle::dark() : HeatmapStyle::light();
  // The application palette, not this widget's: a theme switch reaches widgets by a later event.
  s.background = QApplication::palette().color(QPalette::Base);
  s.foreground = QApplication::palette().color(QPalette::Text);
  s.fontSize = 11;
  s.mapping = m_selectors->mapping();
  s.mapping.sharedScale = m_sharedScale && m_sharedScale->isChecked();
  m_heatmap->setStyle(s);
  m_grid->setStyle(s);
  HeatmapStyle t = s;
  t.showTitle = false;
  m_tokenView->setStyle(t);
  m_positional->setStyle(s, m_dark);
  if (m_panels) m_panels->setStyle(s, m_dark);
}

}  // namespace atlas::ui
