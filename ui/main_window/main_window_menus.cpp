// MainWindow: menus, model opening (dialogs, gallery, recent list, drag and drop), export,
// settings and the About box.
#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QCloseEvent>
#include <QComboBox>
#include <QDockWidget>
#include <QClipboard>
#include <QDragEnterEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QGuiApplication>
#include <QInputDialog>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QSettings>
#include <QStatusBar>
#include <QTextStream>
#include <algorithm>
#include <cstdio>
#include <map>
#include <tuple>

#include "core/formats/input_file.h"
#include "core/tensor/error.h"
#include "ui/main_window/command_palette.h"
#include "ui/export/figure_export.h"
#include "ui/views/heatmap_view.h"
#include "ui/main_window/main_window.h"
#include "ui/panels/panel_registry.h"
#include "ui/main_window/model_properties_dialog.h"
#include "ui/views/model_view.h"
#include "ui/views/token_view.h"
#include "ui/main_window/preset_gallery.h"
#include "core/model/demos.h"
#include "core/model/presets.h"
#include "ui/main_window/run_controller.h"
#include "ui/main_window/theme.h"
#include "ui/tools/training_panel.h"

namespace atlas::ui {

namespace {
constexpr int kMaxRecent = 8;

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
    connect(a, &QAction::triggered, this, [this, v] { exportView(v); });
    if (v == "heatmap") a->setShortcut(QKeySequence("Ctrl+E"));
  }
  file->addAction("Export &all heads to a folder\u2026", this, &MainWindow::exportAllHeadsDialog);
  QMenu* edit = menuBar()->addMenu("&Edit");
  edit->addAction("&Copy heatmap figure", QKeySequence("Ctrl+Shift+C"), this, [this] { copyFigure("heatmap"); });
  edit->addAction("Copy &model grid figure", this, [this] { copyFigure("model"); });
  edit->addAction("Copy &token view figure", this, [this] { copyFigure("tokens"); });
  file->addSeparator();
  file->addAction("&Open workspace\u2026", QKeySequence("Ctrl+Shift+W"), this, &MainWindow::openWorkspaceDialog);
  file->addAction("Sa&ve workspace\u2026", QKeySequence::Save, this, &MainWindow::saveWorkspaceDialog);
  file->addSeparator();
  file->addAction("&Quit", QKeySequence::Quit, this, &QWidget::close);

  // Model
  QMenu* model = menuBar()->addMenu("&Model");
  model->addAction("Open model &folder\u2026", QKeySequence::Open, this, &MainWindow::openFolder);
  model->addAction("Open model &file (.safetensors, .gguf)\u2026", QKeySequence("Ctrl+Shift+O"), this,
                   &MainWindow::openModelFile);
  model->addAction("Open &image as input\u2026", QKeySequence("Ctrl+I"), this, &MainWindow::openImageDialog);
  model->addAction("Preset &gallery\u2026", QKeySequence("Ctrl+G"), this, &MainWindow::openGallery);
  model->addAction("&Train a model\u2026", this, [this] {
    trainingPanel()->show();
    trainingPanel()->raise();
  });
  model->addAction("P&roperties\u2026", this, [this] {
    if (!m_model) return;
    createModelPropertiesDialog(*m_model, m_modelSpec, this)->show();
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
  m_recentMenu = model->addMenu("&Recent");
  rebuildRecentMenu();

  // View
  m_viewMenu = menuBar()->addMenu("&View");
  m_viewMenu->addAction(m_modelDock->toggleViewAction());
  m_viewMenu->addAction(m_tokenDock->toggleViewAction());
  m_viewMenu->addAction(m_positionalDock->toggleViewAction());
  m_viewMenu->addSeparator();
  // The variant folders' explorers (ui/panels/<m>/): windows of their own with a small model.
  for (const VariantExplorer& x : variantExplorers())
    m_viewMenu->addAction(x.menuText, this, [this, open = x.open] { open(this, ExplorerInput{trace(), sourceText()}); });
  m_viewMenu->addAction("Reset &zoom", QKeySequence("Ctrl+0"), this, [this] { m_heatmap->resetZoom(); });
  m_viewMenu->addAction("&Command palette\u2026", QKeySequence("Ctrl+K"), this, [this] { openCommandPalette(); });
  // Kobayashi et al. 2020: alpha_ij |f(x_j)| instead of alpha_ij (core/analysis/value_weighted.h).
  m_valueWeightedAction = m_viewMenu->addAction("&Value-weighted attention");
  m_valueWeightedAction->setCheckable(true);
  m_valueWeightedAction->setToolTip("Show each head's weight times the norm of what the key's value adds through "
                                    "the head, |W^O_h v_j| (traces the value norms; re-runs once)");
  connect(m_valueWeightedAction, &QAction::toggled, this, [this] { updatePanelTraceOptions(true); });
  m_sharedScaleAction = m_viewMenu->addAction("&Grid: one colour scale for all tiles");
  m_sharedScaleAction->setCheckable(true);
  m_sharedScaleAction->setToolTip("Draw every tile of the layers \u00D7 heads grid on the largest weight of any tile, "
                                  "so tiles compare by colour (off: each tile on its own maximum)");
  connect(m_sharedScaleAction, &QAction::toggled, this, [this] { updateStyles(); });
  // Full-attention maps past 2^28 weights are computed on request from the traced queries and
  // keys (core/model/attention_on_demand.h); a user may keep every map or never keep one.
  QMenu* maps = m_viewMenu->addMenu("Attention &maps");
  auto* mapGroup = new QActionGroup(this);
  const std::pair<MapStorage, const char*> storages[] = {
      {MapStorage::Auto, "&Automatic (computed on request past 2^28 weights)"},
      {MapStorage::Stored, "Always &stored (every map in memory)"},
      {MapStorage::OnDemand, "Always computed on &request (queries and keys kept)"}};
  const int saved = QSettings().value("attentionMaps", 0).toInt();
  for (const auto& [storage, label] : storages) {
    QAction* a = maps->addAction(label);
    a->setCheckable(true);
    a->setChecked(static_cast<int>(storage) == saved);
    mapGroup->addAction(a);
    m_mapStorageActions[static_cast<int>(storage)] = a;
    connect(a, &QAction::triggered, this, [this, storage = storage] {
      QSettings().setValue("attentionMaps", static_cast<int>(storage));
      m_runner->runOptions().trace.maps = storage;
      if (m_trace && m_runner->model()) onTextChanged();  // run again with the new storage
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
  const std::tuple<const char*, Qt::Key, const char*, std::function<void()>> moves[] = {
      {"&Previous layer", Qt::Key_BracketLeft, "Alt+Up", [this] { nextLayer(-1); }},
      {"&Next layer", Qt::Key_BracketRight, "Alt+Down", [this] { nextLayer(1); }},
      {"P&revious head", Qt::Key_Comma, "Alt+Left", [this] { nextHead(-1); }},
      {"N&ext head", Qt::Key_Period, "Alt+Right", [this] { nextHead(1); }}};
  for (const auto& [label, key, anywhere, move] : moves) {
    QAction* a = nav->addAction(label, this, move);
    a->setShortcuts({QKeySequence(key), QKeySequence(anywhere)});
  }
  nav->addSeparator();
  nav->addAction("Focus the &input", QKeySequence("Ctrl+L"), this, [this] { m_source->setFocus(); });
  nav->addAction("Focus the &heatmap", QKeySequence("Ctrl+H"), this, [this] { m_heatmap->setFocus(); });

  QMenu* help = menuBar()->addMenu("&Help");
  help->addAction("&Keyboard shortcuts", QKeySequence::HelpContents, this, &MainWindow::showShortcuts);
  help->addAction("&About Attention Atlas", this, &MainWindow::showAbout);
}

void MainWindow::rebuildRecentMenu() {
  m_recentMenu->clear();
  const QStringList recent = QSettings().value("recentModels").toStringList();
  for (const QString& spec : recent) {
    QAction* a = m_recentMenu->addAction(spec);
    connect(a, &QAction::triggered, this, [this, spec] { loadModel(spec); });
  }
  if (recent.isEmpty()) m_recentMenu->addAction("(none yet)")->setEnabled(false);
  m_recentMenu->addSeparator();
  m_recentMenu->addAction("Clear", this, [this] {
    QSettings().remove("recentModels");
    rebuildRecentMenu();
  });
}

void MainWindow::addRecent(const QString& spec) {
  QSettings s;
  QStringList recent = s.value("recentModels").toStringList();
  recent.removeAll(spec);
  recent.prepend(spec);
  while (recent.size() > kMaxRecent) recent.removeLast();
  s.setValue("recentModels", recent);
  rebuildRecentMenu();
}

void MainWindow::openFolder() {
  const QString dir = QFileDialog::getExistingDirectory(this, "Open model folder (config.json + model.safetensors)",
                                                        QSettings().value("lastModelDir").toString());
  if (dir.isEmpty()) return;
  QSettings().setValue("lastModelDir", dir);
  loadModel(dir);
}

void MainWindow::openModelFile() {
  const QString f = QFileDialog::getOpenFileName(this, "Open model file",
                                                 QSettings().value("lastModelDir").toString(),
                                                 "Model files (*.safetensors *.gguf);;safetensors (*.safetensors);;"
                                                 "llama.cpp GGUF (*.gguf);;All files (*)");
  if (f.isEmpty()) return;
  QSettings().setValue("lastModelDir", QFileInfo(f).absolutePath());
  loadModel(f);
}

void MainWindow::openGallery() {
  PresetGallery g(m_modelSpec, this);
  if (g.exec() != QDialog::Accepted || g.selectedSpec().isEmpty()) return;
  const QString spec = g.selectedSpec();
  if (spec.startsWith("demo:"))
    openDemo(spec.mid(5));
  else
    loadModel(spec);
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

void MainWindow::exportView(const QString& view) {
  if (!m_trace) return;
  QSettings settings;
  const QString filters = "SVG vector (*.svg);;PDF vector (*.pdf);;PNG image (*.png);;NumPy array (*.npy);;CSV table (*.csv)";
  QString selected = settings.value("exportFilter", "SVG vector (*.svg)").toString();
  const AttentionMap* map = findAttentionMap(*m_trace, m_sel);
  const QString base = QString("%1.%2").arg(view, (view == "heatmap" || view == "tokens") && map
                                                      ? QString::fromStdString(map->array) + "." + headShortName(m_sel.head)
                                                      : m_sel.stack);
  QString path = QFileDialog::getSaveFileName(this, "Export " + view,
                                              settings.value("exportDir").toString() + "/" + base + ".svg", filters, &selected);
  if (path.isEmpty()) return;
  if (QFileInfo(path).suffix().isEmpty()) path += "." + selected.section("*.", 1).left(3);
  settings.setValue("exportDir", QFileInfo(path).absolutePath());
  settings.setValue("exportFilter", selected);
  FigureSpec spec;
  spec.view = view;
  spec.selection = m_sel;
  spec.mapping = currentMapping();
  spec.query = m_selectedQuery;
  if (QFileInfo(path).suffix().toLower() == "png") {
    bool ok = false;
    spec.dpi = QInputDialog::getInt(this, "PNG resolution", "Dots per inch:", settings.value("exportDpi", 300).toInt(),
                                    36, 1200, 1, &ok);
    if (!ok) return;
    settings.setValue("exportDpi", spec.dpi);
  }
  try {
    // An overview on screen (a long input's map computed on request): its .npy holds every
    // weight, not the overview's block maxima.
    const bool overviewShown = spec.view == "heatmap" && m_heatmap->data().detail != nullptr;
    const bool exact = overviewShown && QFileInfo(path).suffix().toLower() == "npy" && m_trace &&
                       writeExactHeatmapNpy(spec, *m_trace, path);
    if (!exact) writeFigure(viewFigure(spec), spec.dpi, path);
    statusBar()->showMessage("Wrote " + path, 5000);
  } catch (const std::exception& e) {
    QMessageBox::critical(this, "Export failed", QString::fromStdString(e.what()));
  }
}

// The figure of a view as it is on screen: the heatmap's own data (value-weighted, flow, ...),
// the other views from the trace.
FigureContent MainWindow::viewFigure(const FigureSpec& spec) const {
  if (spec.view == "heatmap" && !m_heatmap->data().empty()) return heatmapFigureContent(m_heatmap->data(), spec);
  return figureContent(spec, *m_trace);
}

void MainWindow::copyFigure(const QString& view) {
  if (!m_trace) return;
  FigureSpec spec;
  spec.view = view;
  spec.selection = m_sel;
  spec.mapping = currentMapping();
  spec.query = m_selectedQuery;
  spec.dpi = 200;
  try {
    const FigureContent fig = viewFigure(spec);
    const QImage image = figureImage(fig, spec.dpi);
    const QByteArray svg = figureSvg(fig);  // may refuse (ui/export/svg_writer.h): before the clipboard owns anything
    auto* mime = new QMimeData;
    mime->setImageData(image);
    mime->setData("image/svg+xml", svg);
    QGuiApplication::clipboard()->setMimeData(mime);
    statusBar()->showMessage("Copied the " + view + " figure (PNG and SVG) to the clipboard", 5000);
  } catch (const std::exception& e) {
    showError(QString::fromStdString(e.what()));
  }
}

// Right-click on the heatmap, the model grid or the token view: copy, export, compare.
void MainWindow::installViewContextMenus() {
  const std::pair<QWidget*, QString> views[] = {{m_heatmap, "heatmap"}, {m_modelView, "model"}, {m_tokenView, "tokens"}};
  for (const auto& [widget, view] : views) {
    widget->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(widget, &QWidget::customContextMenuRequested, this, [this, widget = widget, view = view](const QPoint& at) {
      viewContextMenu(view, view == "heatmap" ? m_heatmap->rowAt(at) : -1)->popup(widget->mapToGlobal(at));
    });
  }
}

QMenu* MainWindow::viewContextMenu(const QString& view, int row) {
  auto* menu = new QMenu(this);
  menu->setAttribute(Qt::WA_DeleteOnClose);
  menu->setEnabled(m_trace != nullptr);
  // Pin the query row under the cursor (every view follows it), or unpin.
  if (view == "heatmap" && row >= 0 && row < m_heatmap->data().rows) {
    const QString label = m_heatmap->data().rowLabels.value(row);
    menu->addAction(QString("&Pin query %1 %2").arg(row).arg(label), this, [this, row] { m_heatmap->setPinnedRow(row); });
  }
  if (view == "heatmap" && m_heatmap->pinnedRow() >= 0)
    menu->addAction("&Unpin the query", this, [this] { m_heatmap->setPinnedRow(-1); });
  if (view == "heatmap") menu->addSeparator();
  menu->addAction("&Copy figure", this, [this, view] { copyFigure(view); });
  menu->addAction("&Export figure\u2026", this, [this, view] { exportView(view); });
  menu->addSeparator();
  menu->addAction("Compare with another &input or model\u2026", this, [this] {
    m_compareDock->show();
    m_compareDock->raise();
  });
  menu->addAction("&Ablation sweep of this input\u2026", this, [this] {
    m_sweepDock->show();
    m_sweepDock->raise();
  });
  return menu;
}

CommandPalette* MainWindow::openCommandPalette() {
  auto* palette = new CommandPalette(CommandPalette::menuEntries(menuBar()), this);
  palette->setAttribute(Qt::WA_DeleteOnClose);
  palette->show();
  palette->filterEdit()->setFocus();
  return palette;
}

void MainWindow::exportAllHeadsDialog() {
  if (!m_trace) return;
  QSettings settings;
  const QString dir = QFileDialog::getExistingDirectory(this, "Export every head of every layer to",
                                                        settings.value("exportDir").toString());
  if (dir.isEmpty()) return;
  bool ok = false;
  const QString format = QInputDialog::getItem(this, "Format", "File format:", figureFormats(), 0, false, &ok);
  if (!ok) return;
  FigureSpec spec;
  spec.mapping = currentMapping();
  spec.dpi = settings.value("exportDpi", 300).toInt();
  QApplication::setOverrideCursor(Qt::WaitCursor);
  try {
    const QStringList files = exportAllHeads(spec, *m_trace, dir, format);
    QApplication::restoreOverrideCursor();
    statusBar()->showMessage(QString("Wrote %1 files to %2").arg(files.size()).arg(dir), 8000);
  } catch (const std::exception& e) {
    QApplication::restoreOverrideCursor();
    QMessageBox::critical(this, "Export failed", QString::fromStdString(e.what()));
  }
}

void MainWindow::showShortcuts() {
  QMessageBox::information(this, "Keyboard shortcuts",
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

void MainWindow::showAbout() {
  QMessageBox::about(
      this, "About Attention Atlas",
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

void MainWindow::setDarkTheme(bool dark) {
  m_dark = dark;
  applyTheme(dark);
  for (QAction* a : findChildren<QAction*>())
    if (a->objectName() == (dark ? "themeDark" : "themeLight")) a->setChecked(true);
  updateStyles();
}

void MainWindow::restoreSettings() {
  QSettings s;
  resize(1280, 800);
  restoreGeometry(s.value("window/geometry").toByteArray());
  restoreState(s.value("window/state").toByteArray());
  m_cmapCombo->setCurrentIndex(std::max<int>(0, colormapNames().indexOf(s.value("view/colormap").toString())));
  m_scaleCombo->setCurrentIndex(s.value("view/scale", 0).toInt());
  m_normCombo->setCurrentIndex(s.value("view/normalization", 0).toInt());
  m_sharedScaleAction->setChecked(s.value("view/shared_grid_scale", false).toBool());
  setDarkTheme(s.value("view/dark", false).toBool());
}

void MainWindow::saveSettings() {
  if (m_headless) return;  // a scripted run must not rewrite the user's layout
  QSettings s;
  s.setValue("window/geometry", saveGeometry());
  s.setValue("window/state", saveState());
  s.setValue("view/colormap", m_cmapCombo->currentText());
  s.setValue("view/scale", m_scaleCombo->currentIndex());
  s.setValue("view/normalization", m_normCombo->currentIndex());
  s.setValue("view/shared_grid_scale", m_sharedScaleAction->isChecked());
  s.setValue("view/dark", m_dark);
}

void MainWindow::closeEvent(QCloseEvent* e) {
  saveSettings();
  m_runner->cancel();
  if (m_trainingPanel) m_trainingPanel->stop();
  QMainWindow::closeEvent(e);
}

TrainingPanel* MainWindow::trainingPanel() {
  if (!m_trainingPanel) {
    m_trainingPanel = new TrainingPanel(this);
    connect(m_trainingPanel, &TrainingPanel::modelSnapshot, this, &MainWindow::showTrainedModel);
  }
  return m_trainingPanel;
}

void MainWindow::showTrainedModel(std::shared_ptr<const Model> model, const QString& label,
                                  const QString& source, const QString& target) {
  // Later snapshots of the same run keep whatever the user typed since the first one.
  if (m_modelSpec.section(" @", 0, 0) != label.section(" @", 0, 0)) {
    const QSignalBlocker blockSource(m_source), blockTarget(m_target);
    m_source->setPlainText(source);
    m_target->setPlainText(target);
  }
  m_runner->setModel(model);
  onModelLoaded(label, std::move(model));
}

void MainWindow::failHeadless(const QString& message) {
  std::fprintf(stderr, "attention-atlas: %s\n", message.toLocal8Bit().constData());
  QCoreApplication::exit(1);
}

}  // namespace atlas::ui
