#pragma once
// The explorer window: input (text boxes and token chips) on top, the selectors and the
// attention heatmap in the centre, the model grid, token view and positional encodings as
// dockable panels, the variant panels and tools below. Every view reads the Trace of the latest
// run; none recomputes the model. The window composes its parts (ui/main_window/: InputArea,
// SelectorBar, RunStatus, PanelDocks, ImageMode, FigureActions, BackendStatus, RecentModels)
// and owns the run on screen and the linked selection, which the parts see through a
// WindowSession. Tests drive it through this interface, its menus' actions (by object name)
// and its parts found by object name (findChild).
#include <QMainWindow>
#include <QSize>
#include <QVector>
#include <memory>

#include "core/model/model.h"
#include "ui/views/attention_selection.h"

class QAction;
class QComboBox;
class QDockWidget;
class QImage;
class QLabel;
class QMenu;

namespace atlas::ui {

class BackendStatus;
class FigureActions;
class HeatmapView;
class ImageMode;
class InputArea;
class ModelView;
class OverviewCache;
class PanelDocks;
class PositionalView;
class RecentModels;
class RunController;
class RunStatus;
class SelectorBar;
class TokenView;
class WindowSession;

// The main heatmap's least size: the docks (bottom panels, side views) give way before it does.
inline constexpr QSize kMainHeatmapMinimum{320, 240};
// The height below which a bottom panel, when opened, is given more room (panel_docks.cpp).
inline constexpr int kBottomDockReadable = 260;
struct Workspace;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  // Headless use (--screenshot, --quit-after-run): failures go to stderr and exit(1) instead
  // of a dialog, and `firstRunShown` fires once the first trace is on screen.
  void setHeadless(bool headless) { m_headless = headless; }
  void loadModel(const QString& spec);
  void openDemo(const QString& name);  // sets the demo's sample input, then loads it
  void setSourceText(const QString& text);
  void setTargetText(const QString& text);
  // Image input for pixel models and ViT patch models (image_mode.h): the image becomes the
  // input tokens until the user types. False, with the reason in lastError(), when the model
  // does not take images or the image is empty.
  bool setImage(const QImage& image, const QString& name);
  bool openImage(const QString& path);
  void setDarkTheme(bool dark);

  // The run on screen and the linked selection (also driven by the selectors, the keyboard and
  // every panel's picks). selectQuery: a token of the heatmap's query side (-1 = none); the
  // views pin its row in the map on screen.
  std::shared_ptr<const Trace> trace() const;
  QString modelSpec() const;
  std::shared_ptr<const Model> model() const;  // the model loaded (null before the first)
  AttentionSelection selection() const;
  void setSelection(const AttentionSelection& sel);
  void selectQuery(int token);
  QString lastError() const { return m_lastError; }

  // Workspaces (ui/workspace.h, window_workspace.cpp). Open/save return false with the reason
  // in lastError() (and a dialog unless headless).
  Workspace workspace() const;
  bool openWorkspace(const QString& path);
  bool saveWorkspace(const QString& path);
  // Why the selection of the last workspace opened was not applied (a layer, head, segment,
  // map or query its run does not have, with the valid range); empty when it was.
  QString workspaceError() const { return m_workspaceError; }

 signals:
  void modelReady(const QString& spec);
  void traceShown();     // after every run's views are updated
  void overviewShown();  // an overview computed on a worker thread has reached the views
  void firstRunShown();  // once
  void runError(const QString& message);

 protected:
  void closeEvent(QCloseEvent*) override;
  void showEvent(QShowEvent*) override;
  void dragEnterEvent(QDragEnterEvent*) override;
  void dropEvent(QDropEvent*) override;

 private:
  // main_window.cpp
  void buildUi();
  void connectParts();
  void onModelLoaded(const QString& spec, std::shared_ptr<const Model> model);
  void onRunFinished(std::shared_ptr<const RunResult> result, double ms);
  void onRunFailed(const QString& message);
  void runInput();  // the input again, as typed (or the image's tokens)
  void updateViews();
  void updateStyles();
  void showError(const QString& message);  // empty: hides the error bar
  // window_menus.cpp
  void buildMenus();
  // window_workspace.cpp
  void restoreWorkspaceTools(const QString& loadedSpec);
  void finishWorkspace();

  WindowSession* m_session = nullptr;
  RunController* m_runner = nullptr;
  InputArea* m_input = nullptr;
  SelectorBar* m_selectors = nullptr;
  QLabel* m_errorBar = nullptr;
  HeatmapView* m_heatmap = nullptr;
  ModelView* m_grid = nullptr;
  TokenView* m_tokenView = nullptr;
  QComboBox* m_tokenHeads = nullptr;  // the token view: selected head or every head
  PositionalView* m_positional = nullptr;
  QDockWidget* m_gridDock = nullptr;
  QDockWidget* m_tokenDock = nullptr;
  QDockWidget* m_positionalDock = nullptr;
  OverviewCache* m_overviews = nullptr;
  RunStatus* m_status = nullptr;
  PanelDocks* m_panels = nullptr;
  ImageMode* m_image = nullptr;
  FigureActions* m_figures = nullptr;
  BackendStatus* m_backend = nullptr;
  RecentModels* m_recent = nullptr;
  QMenu* m_viewMenu = nullptr;
  QAction* m_valueWeighted = nullptr;  // View > Value-weighted attention
  QAction* m_sharedScale = nullptr;    // View > Grid: one colour scale for all tiles
  QString m_lastError;
  QString m_weightWarning;  // weights float32 cannot carry, kept in the status line after every run
  bool m_headless = false;
  bool m_firstShown = false;
  bool m_defaultLayout = true;  // no saved layout: the dock widths are set on the first show
  bool m_dark = false;
  int m_queryBegin = 0;  // first query token of the map on screen (an XL segment's start)
  int m_keyBegin = 0;    // first key token of the map on screen
  // The query row the heatmap's attention flow was computed for when the input is too long for
  // the whole matrix (-2: the heatmap shows no such flow): pinning another query recomputes it.
  int m_flowRow = -2;
  QVector<int> m_searchQueries, m_searchKeys;  // source positions the token search matches
  std::shared_ptr<Workspace> m_pendingWorkspace;  // being opened: its selection waits for the run
  QString m_workspaceError;
  QString m_workspaceNote;  // a tool state the workspace could not restore, for the status line
  QString m_workspacePath;
};

}  // namespace atlas::ui
