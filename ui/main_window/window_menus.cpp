// MainWindow: the menus (every action a user or a test triggers; actions tests find carry an
// object name), model opening (dialogs, gallery, recent list, drag and drop), the theme, and
// closing.
#include <QAction>
#include <QActionGroup>
#include <QCloseEvent>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QSettings>
#include <functional>
#include <map>
#include <tuple>

#include "core/formats/input_file.h"
#include "core/model/demos.h"
#include "core/model/presets.h"
#include "ui/dialog_folders.h"
#include "core/tensor/error.h"
#include "ui/main_window/backend_status.h"
#include "ui/main_window/command_palette.h"
#include "ui/main_window/figure_actions.h"
#include "ui/main_window/image_mode.h"
#include "ui/main_window/input_area.h"
#include "ui/main_window/main_window.h"
#include "ui/main_window/model_properties_dialog.h"
#include "ui/main_window/panel_docks.h"
#include "ui/main_window/preset_gallery.h"
#include "ui/main_window/recent_models.h"
#include "ui/main_window/run_controller.h"
#include "ui/main_window/run_status.h"
#include "ui/main_window/selector_bar.h"
#include "ui/main_window/theme.h"
#include "ui/main_window/window_session.h"
#include "ui/main_window/window_settings.h"
#include "ui/panels/panel_registry.h"
#include "ui/tools/training_panel.h"
#include "ui/views/heatmap_view.h"
#include "ui/workspace.h"

namespace atlas::ui {

namespace {

bool isImageFile(const QString& path) {
  static const QStringList kSuffixes = {"png", "jpg", "jpeg", "bmp", "gif", "ppm", "pgm", "webp"};
  return kSuffixes.contains(QFileInfo(path).suffix().toLower());
}

// A dropped or chosen path is a model when it is a folder with config.json, a .safetensors
// file or a llama.cpp .gguf file.
bool looksLikeModel(const QString& path) {
  const QFileInfo fi(path);
  if (fi.isDir()) return QFileInfo(fi.filePath() + "/config.json").exists();
  const QString suffix = fi.suffix().toLower();
  return suffix == "safetensors" || suffix == "gguf";
}

// A folder or file the user picks (remembered as lastModelDir); empty when cancelled.
QString chooseModelFolder(QWidget* parent) {
  const QString dir = QFileDialog::getExistingDirectory(parent, "Open model folder (config.json + model.safetensors)",
                                                        dialogFolder(DialogPurpose::Model));
  rememberDialogChoice(DialogPurpose::Model, dir);
  return dir;
}

QString chooseModelFile(QWidget* parent) {
  const QString f = QFileDialog::getOpenFileName(parent, "Open model file", dialogFolder(DialogPurpose::Model),
                                                 "Model files (*.safetensors *.gguf);;safetensors (*.safetensors);;"
                                                 "llama.cpp GGUF (*.gguf);;All files (*)");
  rememberDialogChoice(DialogPurpose::Model, f);
  return f;
}

QString chooseWorkspaceToOpen(QWidget* parent) {
  const QString path = QFileDialog::getOpenFileName(parent, "Open workspace", dialogFolder(DialogPurpose::Workspace),
                                                    "Attention Atlas workspace (*.atlas);;All files (*)");
  rememberDialogChoice(DialogPurpose::Workspace, path);
  return path;
}

QString chooseWorkspaceToSave(QWidget* parent, const QString& current) {
  QString path = QFileDialog::getSaveFileName(
      parent, "Save workspace", current.isEmpty() ? dialogStart(DialogPurpose::Workspace, "untitled.atlas") : current,
      "Attention Atlas workspace (*.atlas)");
  if (path.isEmpty()) return path;
  if (QFileInfo(path).suffix().isEmpty()) path += ".atlas";
  rememberDialogChoice(DialogPurpose::Workspace, path);
  return path;
}

void showShortcuts(QWidget* parent) {
  QMessageBox::information(parent, "Keyboard shortcuts",
                           "<table>"
                           "<tr><td><b>[</b> / <b>]</b></td><td>previous / next layer (not while typing)</td></tr>"
                           "<tr><td><b>,</b> / <b>.</b></td><td>previous / next head (then mean, max, rollout, flow)</td></tr>"
                           "<tr><td>Alt+Up / Alt+Down, Alt+Left / Alt+Right</td><td>layers, heads: whatever has focus</td></tr>"
                           "<tr><td>Ctrl+K</td><td>command palette: every action, typed</td></tr>"
                           "<tr><td>Ctrl+S / Ctrl+Shift+W</td><td>save / open a workspace</td></tr>"
                           "<tr><td>Ctrl+Shift+C</td><td>copy the heatmap figure</td></tr>"
                           "<tr><td>Ctrl+L / Ctrl+H</td><td>focus the input / the heatmap</td></tr>"
                           "<tr><td>wheel, + / -</td><td>zoom the heatmap; drag to pan; double-click or 0 resets</td></tr>"
                           "<tr><td>click a row</td><td>pin a query (Up/Down move it, Esc clears)</td></tr>"
                           "<tr><td>Ctrl+E</td><td>export the heatmap figure</td></tr>"
                           "<tr><td>Ctrl+O / Ctrl+Shift+O / Ctrl+G</td><td>open a folder / a .safetensors or .gguf file / the preset gallery</td></tr>"
                           "</table>");
}

void showAbout(QWidget* parent) {
  QMessageBox::about(
      parent, "About Attention Atlas",
      "<h3>Attention Atlas</h3>"
      "<p>Inspect what a transformer attends to: every view is drawn from the trace of one run.</p>"
      "<p><b>Views and the papers behind them</b></p><ul>"
      "<li>Attention heatmap, model grid: multi-head scaled dot-product attention, Vaswani et al., "
      "<i>Attention Is All You Need</i> (2017).</li>"
      "<li>Attention rollout: Abnar &amp; Zuidema, <i>Quantifying Attention Flow in Transformers</i> (2020).</li>"
      "<li>Token view: Vig, <i>A Multiscale Visualization of Attention in the Transformer Model</i> (BertViz, 2019).</li>"
      "<li>Positional encodings: sinusoidal and learned, Vaswani et al. (2017); relative positions, Shaw et al. "
      "(2018) and Dai et al., <i>Transformer-XL</i> (2019).</li>"
      "<li>Alignment scores and soft attention: Bahdanau et al. (2015), Luong et al. (2015).</li>"
      "<li>Variants (as they land): Sparse Transformer (Child et al. 2019), Reformer (Kitaev et al. 2020), "
      "Adaptive Attention Span (Sukhbaatar et al. 2019), ACT (Graves 2016) and the Universal Transformer "
      "(Dehghani et al. 2019), GTrXL (Parisotto et al. 2019), Performer (Choromanski et al. 2021), "
      "ScaleNorm/FixNorm (Nguyen &amp; Salazar 2019), LayerDrop (Fan et al. 2019).</li></ul>"
      "<p><b>Source documents</b>: <i>The Transformer Family</i>; <i>Transformer Variants</i>; "
      "<i>Transformers</i>; <i>A Survey of Transformers</i>; <i>Attention? Attention!</i></p>"
      "<p>Colour maps: viridis and magma (van der Walt &amp; Smith, polynomial fits), diverging map computed in "
      "Oklab (Ottosson 2020).</p>");
}

}  // namespace

void MainWindow::buildMenus() {
  // File
  QMenu* file = menuBar()->addMenu("&File");
  QMenu* exp = file->addMenu("&Export figure");
  const std::pair<const char*, const char*> views[] = {{"heatmap", "&Heatmap\u2026"},
                                                       {"model", "&Model grid\u2026"},
                                                       {"tokens", "&Token view\u2026"},
                                                       {"positional", "&Positional encoding\u2026"},
                                                       {"similarity", "Positional &similarity P P\u1D40\u2026"}};
  for (const auto& [view, label] : views) {
    QAction* a = exp->addAction(label);
    const QString v = view;
    connect(a, &QAction::triggered, this, [this, v] { m_figures->exportDialog(v); });
    if (v == "heatmap") a->setShortcut(QKeySequence("Ctrl+E"));
  }
  file->addAction("Export &all heads to a folder\u2026", m_figures, &FigureActions::exportAllHeadsDialog);
  QMenu* edit = menuBar()->addMenu("&Edit");
  const std::tuple<const char*, const char*, const char*> copies[] = {
      {"&Copy heatmap figure", "heatmap", "copyHeatmapFigure"},
      {"Copy &model grid figure", "model", "copyModelFigure"},
      {"Copy &token view figure", "tokens", "copyTokensFigure"}};
  for (const auto& [label, view, name] : copies) {
    QAction* a = edit->addAction(label, this, [this, v = QString(view)] { m_figures->copyFigure(v); });
    a->setObjectName(name);
    if (QString(view) == "heatmap") a->setShortcut(QKeySequence("Ctrl+Shift+C"));
  }
  file->addSeparator();
  file->addAction("&Open workspace\u2026", QKeySequence("Ctrl+Shift+W"), this, [this] {
    if (const QString path = chooseWorkspaceToOpen(this); !path.isEmpty()) openWorkspace(path);
  });
  file->addAction("Sa&ve workspace\u2026", QKeySequence::Save, this, [this] {
    if (const QString path = chooseWorkspaceToSave(this, m_workspacePath); !path.isEmpty()) saveWorkspace(path);
  });
  file->addSeparator();
  file->addAction("&Quit", QKeySequence::Quit, this, &QWidget::close);

  // Model
  QMenu* model = menuBar()->addMenu("&Model");
  model->addAction("Open model &folder\u2026", QKeySequence::Open, this, [this] {
    if (const QString dir = chooseModelFolder(this); !dir.isEmpty()) loadModel(dir);
  });
  model->addAction("Open model &file (.safetensors, .gguf)\u2026", QKeySequence("Ctrl+Shift+O"), this, [this] {
    if (const QString f = chooseModelFile(this); !f.isEmpty()) loadModel(f);
  });
  model->addAction("Open &image as input\u2026", QKeySequence("Ctrl+I"), this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, "Open an image for a pixel or ViT model",
                                                      dialogFolder(DialogPurpose::Image),
                                                      "Images (*.png *.jpg *.jpeg *.bmp *.gif *.ppm *.pgm *.webp)");
    rememberDialogChoice(DialogPurpose::Image, path);
    if (!path.isEmpty()) openImage(path);
  });
  model->addAction("Preset &gallery\u2026", QKeySequence("Ctrl+G"), this, [this] {
    PresetGallery g(modelSpec(), this);
    if (g.exec() != QDialog::Accepted || g.selectedSpec().isEmpty()) return;
    const QString spec = g.selectedSpec();
    if (spec.startsWith("demo:")) openDemo(spec.mid(5));
    else loadModel(spec);
  });
  // Model > Train a model… (the panel is made on first use). Its snapshots come to the window
  // as models; a run's first snapshot also types the task example into the input.
  model->addAction("&Train a model\u2026", this, [this] {
    auto* panel = findChild<TrainingPanel*>();
    if (!panel) {
      panel = new TrainingPanel(this);
      panel->setObjectName("trainingPanel");
      connect(panel, &TrainingPanel::modelSnapshot, this,
              [this](std::shared_ptr<const Model> snapshot, const QString& label, const QString& source,
                     const QString& target) {
                // Later snapshots of the same run keep whatever the user typed since the first one.
                if (modelSpec().section(" @", 0, 0) != label.section(" @", 0, 0)) {
                  m_input->setSource(source, /*quiet=*/true);
                  m_input->setTarget(target, /*quiet=*/true);
                }
                m_runner->setModel(snapshot);
                onModelLoaded(label, std::move(snapshot));
              });
    }
    panel->show();
    panel->raise();
  })->setObjectName("trainModel");
  model->addAction("P&roperties\u2026", this, [this] {
    if (const auto m = m_session->model()) createModelPropertiesDialog(*m, modelSpec(), this)->show();
  });
  QMenu* presets = model->addMenu("&Presets");
  std::map<QString, QMenu*> families;
  for (const PresetInfo& p : list_presets()) {
    const QString fam = p.family.empty() ? QString("other") : QString::fromStdString(p.family);
    QMenu*& sub = families[fam];
    if (!sub) sub = presets->addMenu(fam);
    QAction* a = sub->addAction(QString::fromStdString(p.name));
    a->setStatusTip(QString::fromStdString(p.description));
    a->setToolTip(QString::fromStdString(p.description));
    const QString spec = "preset:" + QString::fromStdString(p.name);
    connect(a, &QAction::triggered, this, [this, spec] { loadModel(spec); });
  }
  presets->setToolTipsVisible(true);
  QMenu* demos = model->addMenu("Trained &demos");
  for (const DemoInfo& d : list_demos()) {
    QAction* a = demos->addAction(QString::fromStdString(d.name));
    const QString tip = QString::fromStdString(d.description + "\nTrained by: " + d.command);
    a->setStatusTip(tip);
    a->setToolTip(tip);
    const QString name = QString::fromStdString(d.name);
    connect(a, &QAction::triggered, this, [this, name] { openDemo(name); });
  }
  demos->setToolTipsVisible(true);
  m_recent = new RecentModels(model->addMenu("&Recent"), [this](const QString& spec) { loadModel(spec); });

  // View
  m_viewMenu = menuBar()->addMenu("&View");
  m_viewMenu->addAction(m_gridDock->toggleViewAction());
  m_viewMenu->addAction(m_tokenDock->toggleViewAction());
  m_viewMenu->addAction(m_positionalDock->toggleViewAction());
  m_viewMenu->addSeparator();
  // The variant folders' explorers (ui/panels/<m>/): windows of their own with a small model.
  for (const VariantExplorer& x : variantExplorers())
    m_viewMenu->addAction(x.menuText, this,
                          [this, open = x.open] { open(this, ExplorerInput{trace(), m_input->source()}); });
  m_viewMenu->addAction("Reset &zoom", QKeySequence("Ctrl+0"), m_heatmap, &HeatmapView::resetZoom);
  m_viewMenu->addAction("&Command palette\u2026", QKeySequence("Ctrl+K"), this, [this] {
    auto* palette = new CommandPalette(CommandPalette::menuEntries(menuBar()), this);
    palette->setAttribute(Qt::WA_DeleteOnClose);
    palette->show();
    palette->filterEdit()->setFocus();
  })->setObjectName("commandPalette");
  // Kobayashi et al. 2020: alpha_ij |f(x_j)| instead of alpha_ij (core/analysis/value_weighted.h).
  m_valueWeighted = m_viewMenu->addAction("&Value-weighted attention");
  m_valueWeighted->setObjectName("valueWeighted");
  m_valueWeighted->setCheckable(true);
  m_valueWeighted->setToolTip("Show each head's weight times the norm of what the key's value adds through "
                              "the head, |W^O_h v_j| (traces the value norms; re-runs once)");
  m_sharedScale = m_viewMenu->addAction("&Grid: one colour scale for all tiles");
  m_sharedScale->setObjectName("sharedGridScale");
  m_sharedScale->setCheckable(true);
  m_sharedScale->setToolTip("Draw every tile of the layers \u00D7 heads grid on the largest weight of any tile, "
                            "so tiles compare by colour (off: each tile on its own maximum)");
  connect(m_sharedScale, &QAction::toggled, this, &MainWindow::updateStyles);
  // Full-attention maps past 2^28 weights are computed on request from the traced queries and
  // keys (core/model/attention_on_demand.h); a user may keep every map or never keep one.
  QMenu* maps = m_viewMenu->addMenu("Attention &maps");
  auto* mapGroup = new QActionGroup(this);
  const std::tuple<MapStorage, const char*, const char*> storages[] = {
      {MapStorage::Auto, "&Automatic (computed on request past 2^28 weights)", "mapsAutomatic"},
      {MapStorage::Stored, "Always &stored (every map in memory)", "mapsStored"},
      {MapStorage::OnDemand, "Always computed on &request (queries and keys kept)", "mapsOnDemand"}};
  const int saved = QSettings().value("attentionMaps", 0).toInt();
  for (const auto& [storage, label, name] : storages) {
    QAction* a = maps->addAction(label);
    a->setObjectName(name);
    a->setCheckable(true);
    a->setChecked(static_cast<int>(storage) == saved);
    mapGroup->addAction(a);
    connect(a, &QAction::triggered, this, [this, storage = storage] {
      QSettings().setValue("attentionMaps", static_cast<int>(storage));
      m_runner->runOptions().trace.maps = storage;
      if (m_session->trace()) runInput();  // run again with the new storage
    });
  }
  if (saved >= 0 && saved <= 2) m_runner->runOptions().trace.maps = static_cast<MapStorage>(saved);
  QMenu* theme = m_viewMenu->addMenu("&Theme");
  auto* group = new QActionGroup(this);
  QAction* light = theme->addAction("&Light");
  QAction* dark = theme->addAction("&Dark");
  for (QAction* a : {light, dark}) {
    a->setCheckable(true);
    group->addAction(a);
  }
  light->setObjectName("themeLight");
  dark->setObjectName("themeDark");
  connect(light, &QAction::triggered, this, [this] { setDarkTheme(false); });
  connect(dark, &QAction::triggered, this, [this] { setDarkTheme(true); });

  // Navigate: [ ] layers, , . heads. Text boxes claim these keys while they have focus
  // (ShortcutOverride), so typing is never hijacked; Alt+arrows (which no text box uses) work
  // whatever has focus: Alt+Up/Down layers, Alt+Left/Right heads.
  QMenu* nav = menuBar()->addMenu("&Navigate");
  const auto stepLayer = [this](int delta) {
    const AttentionSelection s = m_selectors->stepLayer(selection(), delta);
    if (s.layer != selection().layer) setSelection(s);
  };
  const auto stepHead = [this](int delta) {
    const AttentionSelection s = m_selectors->stepHead(selection(), delta);
    if (s.head != selection().head) setSelection(s);
  };
  const std::tuple<const char*, Qt::Key, const char*, std::function<void()>> moves[] = {
      {"&Previous layer", Qt::Key_BracketLeft, "Alt+Up", [stepLayer] { stepLayer(-1); }},
      {"&Next layer", Qt::Key_BracketRight, "Alt+Down", [stepLayer] { stepLayer(1); }},
      {"P&revious head", Qt::Key_Comma, "Alt+Left", [stepHead] { stepHead(-1); }},
      {"N&ext head", Qt::Key_Period, "Alt+Right", [stepHead] { stepHead(1); }}};
  for (const auto& [label, key, anywhere, move] : moves) {
    QAction* a = nav->addAction(label, this, move);
    a->setShortcuts({QKeySequence(key), QKeySequence(anywhere)});
  }
  nav->addSeparator();
  nav->addAction("Focus the &input", QKeySequence("Ctrl+L"), m_input, &InputArea::focusSource);
  nav->addAction("Focus the &heatmap", QKeySequence("Ctrl+H"), this, [this] { m_heatmap->setFocus(); });

  QMenu* help = menuBar()->addMenu("&Help");
  help->addAction("&Keyboard shortcuts", QKeySequence::HelpContents, this, [this] { showShortcuts(this); });
  help->addAction("&About Attention Atlas", this, [this] { showAbout(this); });

  // The parts that bring menus of their own: the panels (View > Variant panels, the pattern
  // view) and the compute backend (Settings), then the saved layout of all their docks.
  m_panels = new PanelDocks(this, m_session, m_runner, m_viewMenu, m_positionalDock);
  m_gridDock->raise();
  connect(m_valueWeighted, &QAction::toggled, m_panels, &PanelDocks::setValueNorms);
  const ViewSettings view = restoreWindowSettings(*this);
  m_selectors->setMapping(view.mapping.colormap, view.mapping.scale, view.mapping.normalization);
  m_sharedScale->setChecked(view.mapping.sharedScale);
  setDarkTheme(view.dark);
  m_defaultLayout = !view.layoutRestored;
  m_backend = new BackendStatus(this, m_runner);
  if (const QString problem = m_backend->applySaved(); !problem.isEmpty())
    m_status->setText("Compute backend: " + problem + "; using the CPU");
}

void MainWindow::dragEnterEvent(QDragEnterEvent* e) {
  if (!e->mimeData()->hasUrls()) return;
  for (const QUrl& u : e->mimeData()->urls())
    if (u.isLocalFile()) {
      const QString path = u.toLocalFile();
      if (looksLikeModel(path) || QFileInfo(path).suffix().toLower() == "txt" || isImageFile(path)) {
        e->acceptProposedAction();
        return;
      }
    }
}

void MainWindow::dropEvent(QDropEvent* e) {
  for (const QUrl& u : e->mimeData()->urls()) {
    if (!u.isLocalFile()) continue;
    const QString path = u.toLocalFile();
    if (looksLikeModel(path)) {
      loadModel(path);
      e->acceptProposedAction();
      return;
    }
    if (isImageFile(path)) {  // an image becomes the input of a pixel model
      openImage(path);
      e->acceptProposedAction();
      return;
    }
    if (QFileInfo(path).suffix().toLower() == "txt") {  // a text file becomes the input
      try {  // regular files only, capped, never blocking (a dropped FIFO would freeze the window)
        setSourceText(QString::fromStdString(read_input_file(path.toStdString(), InputKind::Text)));
      } catch (const AtlasError& e) {
        showError(QString::fromStdString(e.what()));
      }
      e->acceptProposedAction();
      return;
    }
  }
}

void MainWindow::setDarkTheme(bool dark) {
  m_dark = dark;
  applyTheme(dark);
  for (QAction* a : findChildren<QAction*>())
    if (a->objectName() == (dark ? "themeDark" : "themeLight")) a->setChecked(true);
  updateStyles();
}

// The default layout's right dock area (the model grid and its tabs) is sized once the window
// has its real width: sized in the constructor, it ends wherever the docks' minimums leave it (a
// 208-pixel column at 1280 x 800, its tabs elided to "Mo…").
void MainWindow::showEvent(QShowEvent* e) {
  QMainWindow::showEvent(e);
  if (!m_defaultLayout) return;
  m_defaultLayout = false;
  resizeDocks({m_gridDock}, {std::max(420, width() * 2 / 5)}, Qt::Horizontal);
}

void MainWindow::closeEvent(QCloseEvent* e) {
  if (!m_headless) {  // a scripted run must not rewrite the user's layout
    ViewSettings view;
    view.mapping = m_selectors->mapping();
    view.mapping.sharedScale = m_sharedScale->isChecked();
    view.dark = m_dark;
    saveWindowSettings(*this, view);
  }
  m_runner->cancel();
  if (auto* training = findChild<TrainingPanel*>()) training->stop();
  QMainWindow::closeEvent(e);
}

}  // namespace atlas::ui
