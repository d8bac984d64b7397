#include "ui/main_window/figure_actions.h"

#include <QApplication>
#include <QClipboard>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QGuiApplication>
#include <QInputDialog>
#include <QMainWindow>
#include <QMenu>
#include <QMessageBox>
#include <QMimeData>
#include <QSettings>
#include <QStatusBar>
#include <memory>
#include <optional>

#include "ui/export/export_dialog.h"
#include "ui/export/figure_export.h"
#include "ui/dialog_folders.h"
#include "ui/main_window/window_session.h"
#include "ui/views/heatmap_view.h"
#include "ui/views/model_view.h"
#include "ui/views/token_view.h"

namespace atlas::ui {

FigureActions::FigureActions(QMainWindow* window, WindowSession* session, HeatmapView* heatmap, ModelView* grid,
                             TokenView* tokens, std::function<ColorMapping()> mapping)
    : QObject(window), m_window(window), m_session(session), m_heatmap(heatmap), m_mapping(std::move(mapping)) {
  setObjectName("figureActions");
  const std::pair<QWidget*, QString> views[] = {{heatmap, "heatmap"}, {grid, "model"}, {tokens, "tokens"}};
  for (const auto& [widget, view] : views) {
    widget->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(widget, &QWidget::customContextMenuRequested, this, [this, widget = widget, view = view](const QPoint& at) {
      contextMenu(view, view == "heatmap" ? m_heatmap->rowAt(at) : -1)->popup(widget->mapToGlobal(at));
    });
  }
}

FigureSpec FigureActions::specOf(const QString& view) const {
  FigureSpec spec;
  spec.view = view;
  spec.selection = m_session->selection();
  spec.mapping = m_mapping();
  spec.query = m_session->query();
  return spec;
}

FigureContent FigureActions::figureOf(const FigureSpec& spec) const {
  if (spec.view == "heatmap" && !m_heatmap->data().empty()) return heatmapFigureContent(m_heatmap->data(), spec);
  return figureContent(spec, *m_session->trace());
}

void FigureActions::exportDialog(const QString& view) {
  const auto trace = m_session->trace();
  if (!trace) return;
  QSettings settings;
  const QString filters = "SVG vector (*.svg);;PDF vector (*.pdf);;PNG image (*.png);;NumPy array (*.npy);;CSV table (*.csv)";
  QString selected = settings.value("exportFilter", "SVG vector (*.svg)").toString();
  const AttentionSelection sel = m_session->selection();
  const AttentionMap* map = findAttentionMap(*trace, sel);
  const QString base = QString("%1.%2").arg(view, (view == "heatmap" || view == "tokens") && map
                                                      ? QString::fromStdString(map->array) + "." + headShortName(sel.head)
                                                      : sel.stack);
  QString path = QFileDialog::getSaveFileName(m_window, "Export " + view, dialogStart(DialogPurpose::Export, base + ".svg"),
                                              filters, &selected);
  if (path.isEmpty()) return;
  if (QFileInfo(path).suffix().isEmpty()) path += "." + selected.section("*.", 1).left(3);
  rememberDialogChoice(DialogPurpose::Export, path);
  settings.setValue("exportFilter", selected);
  FigureSpec spec = specOf(view);
  try {
    // The figure is made only when drawn: an overview's exact .npy does not need it. A PNG needs
    // its size for the resolution prompt first.
    std::optional<FigureContent> fig;
    const auto figure = [&]() -> const FigureContent& {
      if (!fig) fig = figureOf(spec);
      return *fig;
    };
    if (QFileInfo(path).suffix().toLower() == "png") {
      std::unique_ptr<QInputDialog> ask(makeDpiDialog(m_window, figure().sizeInches, settings.value("exportDpi", 300).toInt()));
      if (ask->exec() != QDialog::Accepted) return;
      spec.dpi = ask->intValue();
      settings.setValue("exportDpi", spec.dpi);
    }
    // An overview on screen (a long input's map computed on request): its .npy holds every
    // weight, not the overview's block maxima.
    const bool overviewShown = spec.view == "heatmap" && m_heatmap->data().detail != nullptr;
    const bool exact = overviewShown && QFileInfo(path).suffix().toLower() == "npy" && writeExactHeatmapNpy(spec, *trace, path);
    if (!exact) writeFigure(figure(), spec.dpi, path);
    m_window->statusBar()->showMessage("Wrote " + path, 5000);
  } catch (const std::exception& e) {
    QMessageBox::critical(m_window, "Export failed", QString::fromStdString(e.what()));
  }
}

void FigureActions::copyFigure(const QString& view) {
  if (!m_session->trace()) return;
  FigureSpec spec = specOf(view);
  spec.dpi = 200;
  try {
    const FigureContent fig = figureOf(spec);
    const QImage image = figureImage(fig, spec.dpi);
    const QByteArray svg = figureSvg(fig);  // may refuse (ui/export/svg_writer.h): before the clipboard owns anything
    auto* mime = new QMimeData;
    mime->setImageData(image);
    mime->setData("image/svg+xml", svg);
    QGuiApplication::clipboard()->setMimeData(mime);
    m_window->statusBar()->showMessage("Copied the " + view + " figure (PNG and SVG) to the clipboard", 5000);
  } catch (const std::exception& e) {
    emit failed(QString::fromStdString(e.what()));
  }
}

QMenu* FigureActions::contextMenu(const QString& view, int row) {
  auto* menu = new QMenu(m_window);
  menu->setAttribute(Qt::WA_DeleteOnClose);
  menu->setEnabled(m_session->trace() != nullptr);
  // Pin the query row under the cursor (every view follows it), or unpin.
  if (view == "heatmap" && row >= 0 && row < m_heatmap->data().rows) {
    const QString label = m_heatmap->data().rowLabels.value(row);
    menu->addAction(QString("&Pin query %1 %2").arg(row).arg(label), this, [this, row] { m_heatmap->setPinnedRow(row); });
  }
  if (view == "heatmap" && m_heatmap->pinnedRow() >= 0)
    menu->addAction("&Unpin the query", this, [this] { m_heatmap->setPinnedRow(-1); });
  if (view == "heatmap") menu->addSeparator();
  menu->addAction("&Copy figure", this, [this, view] { copyFigure(view); });
  menu->addAction("&Export figure\u2026", this, [this, view] { exportDialog(view); });
  menu->addSeparator();
  const auto raise = [this](const char* dockName) {
    if (auto* dock = m_window->findChild<QDockWidget*>(dockName)) {
      dock->show();
      dock->raise();
    }
  };
  menu->addAction("Compare with another &input or model\u2026", this, [raise] { raise("compareDock"); });
  menu->addAction("&Ablation sweep of this input\u2026", this, [raise] { raise("sweepDock"); });
  menu->addAction("Activation &patching against a corrupted input\u2026", this, [raise] { raise("patchingDock"); });
  menu->addAction("&Logit attribution of this input\u2026", this, [raise] { raise("dlaDock"); });
  // The QK decomposition splits the cell last clicked on the heatmap.
  menu->addAction("&Why this head attends here (QK decomposition)\u2026", this,
                  [raise] { raise("qkDecompositionDock"); });
  return menu;
}

void FigureActions::exportAllHeadsDialog() {
  const auto trace = m_session->trace();
  if (!trace) return;
  QSettings settings;
  const QString dir = QFileDialog::getExistingDirectory(m_window, "Export every head of every layer to",
                                                        dialogFolder(DialogPurpose::Export));
  if (dir.isEmpty()) return;
  rememberDialogChoice(DialogPurpose::Export, dir);
  bool ok = false;
  const QString format = QInputDialog::getItem(m_window, "Format", "File format:", figureFormats(), 0, false, &ok);
  if (!ok) return;
  FigureSpec spec;
  spec.mapping = m_mapping();
  spec.dpi = settings.value("exportDpi", 300).toInt();
  QApplication::setOverrideCursor(Qt::WaitCursor);
  try {
    const QStringList files = exportAllHeads(spec, *trace, dir, format);
    QApplication::restoreOverrideCursor();
    m_window->statusBar()->showMessage(QString("Wrote %1 files to %2").arg(files.size()).arg(dir), 8000);
  } catch (const std::exception& e) {
    QApplication::restoreOverrideCursor();
    QMessageBox::critical(m_window, "Export failed", QString::fromStdString(e.what()));
  }
}

}  // namespace atlas::ui
