#pragma once
// The explorer window: input (text boxes and token chips) on top, the attention heatmap in
// the centre, the model grid, token view and positional encodings as dockable panels. Every
// view reads the Trace of the latest run; none recomputes the model.
#include <QElapsedTimer>
#include <QFutureWatcher>
#include <QMainWindow>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "ui/views/attention_selection.h"
#include "ui/views/heatmap_data.h"
#include "ui/views/value_mapper.h"
#include "core/model/model.h"

class QComboBox;
class QSpinBox;
class QPlainTextEdit;
class QLabel;
class QProgressBar;
class QToolButton;
class QMenu;
class QAction;
class QActionGroup;
class QDockWidget;
class QImage;

namespace atlas {
struct AblationSpec;
struct RgbImage;
}

namespace atlas::ui {

// The source box's hint when it holds text (image mode replaces it, main_window_image.cpp).
inline const char* const kSourcePlaceholder = "Type text; the model runs as you type";

class HeatmapView;
class ModelView;
class TokenView;
class PositionalView;
class TokenChips;
class RunController;
class VariantPanel;
struct BackendChoice;
class PatternView;
class ImageInputView;
class ScorePanel;
class SweepPanel;
class ComparePanel;
class TokenSearchPanel;
class CommandPalette;
class CorpusPanel;
struct Workspace;
struct FigureContent;
struct FigureSpec;
class TrainingPanel;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  // The first window opens on a trained demo so a newcomer sees learned attention.
  static QString defaultModelSpec() { return "demo:induction"; }
  static QString sampleText();  // assets/samples/sample.txt, compiled in
  // The input to show with `spec`: a demo's own sample (typed as its task was trained),
  // else the sample sentence.
  static QString defaultTextFor(const QString& spec);
  void openDemo(const QString& name);  // sets the demo's sample input, then loads it

  // Headless use (--screenshot, --quit-after-run): failures go to stderr and exit(1) instead
  // of a dialog, and `firstRunShown` fires once the first trace is on screen.
  void setHeadless(bool headless) { m_headless = headless; }
  void loadModel(const QString& spec);
  void showRunMemory(double neededBytes, double availableBytes);  // the status bar's memory note
  void setSourceText(const QString& text);
  // Image input for pixel models (core/input/image_input.h) and ViT patch models
  // (core/input/patch_input.h): the image becomes the input tokens until the user types. Returns false, with the reason in lastError(), when the model
  // does not take images or the image is empty (main_window_image.cpp).
  bool setImage(const QImage& image, const QString& name);
  bool openImage(const QString& path);
  bool imageMode() const { return m_image != nullptr; }
  ImageInputView* imageView() const { return m_imageView; }
  QDockWidget* imageDock() const { return m_imageDock; }
  void setTargetText(const QString& text);
  QString sourceText() const;

  // Selection (also driven by keyboard shortcuts and the model view).
  void setSelection(const AttentionSelection& sel);
  AttentionSelection selection() const { return m_sel; }
  void nextLayer(int delta);
  void nextHead(int delta);
  // Linked query selection: a token of the heatmap's query side (token chip, variant panels);
  // the heatmap and token view pin its row in the map on screen. -1 = none.
  void selectQuery(int token);
  // The layer (or step - 1) and the head of the current map family, for the panels' picks.
  void selectLayer(int layer);
  void selectHead(int head);

  // Accessors for tests and the benchmark.
  HeatmapView* heatmapView() const { return m_heatmap; }
  // An overview of an on-demand map is being computed for the views (overviewShown follows).
  bool overviewPending() const { return !m_overviewJobs.empty(); }
  ModelView* modelView() const { return m_modelView; }
  TokenView* tokenView() const { return m_tokenView; }
  TokenChips* sourceChips() const { return m_sourceChips; }
  TokenChips* targetChips() const { return m_targetChips; }
  PositionalView* positionalView() const { return m_positional; }
  RunController* runController() const { return m_runner; }
  std::shared_ptr<const Trace> trace() const { return m_trace; }
  // "span", "act", "lsh", "xl", "gates", "lens", "ablation", "performer"
  VariantPanel* variantPanel(const QString& id) const;
  QDockWidget* variantDock(const QString& id) const;
  PatternView* patternView() const { return m_patternView; }
  ScorePanel* scorePanel() const { return m_scorePanel; }  // View > Variant panels > Score functions
  QDockWidget* scoreDock() const { return m_scoreDock; }
  SweepPanel* sweepPanel() const { return m_sweepPanel; }  // View > Variant panels > Ablation sweep
  QDockWidget* sweepDock() const { return m_sweepDock; }
  ComparePanel* comparePanel() const { return m_comparePanel; }  // View > Variant panels > Compare
  QDockWidget* compareDock() const { return m_compareDock; }
  TokenSearchPanel* searchPanel() const { return m_searchPanel; }  // View > Variant panels > Token search
  QDockWidget* searchDock() const { return m_searchDock; }
  CorpusPanel* corpusPanel() const { return m_corpusPanel; }  // View > Variant panels > Corpus
  QDockWidget* corpusDock() const { return m_corpusDock; }
  QAction* valueWeightedAction() const { return m_valueWeightedAction; }
  QAction* sharedScaleAction() const { return m_sharedScaleAction; }
  // View > Attention maps: automatic, always stored, always computed on request (TraceOptions::maps).
  QAction* mapStorageAction(MapStorage storage) const { return m_mapStorageActions[static_cast<int>(storage)]; }
  // Compute backend (Settings > Compute backend, stored in QSettings). Returns false and
  // keeps the current backend when the choice cannot start, with the reason in lastError().
  bool applyBackendChoice(const BackendChoice& choice, bool rerun = true);
  QString backendStatus() const;  // the status bar's backend text
  QDockWidget* patternDock() const { return m_patternDock; }
  QString modelSpec() const { return m_modelSpec; }
  QString lastError() const { return m_lastError; }
  bool darkTheme() const { return m_dark; }
  // Model > Train a model… (created on first use). showTrainedModel puts a training
  // snapshot on screen; a run's first snapshot also types the task example into the input.
  TrainingPanel* trainingPanel();
  void showTrainedModel(std::shared_ptr<const Model> model, const QString& label,
                        const QString& source, const QString& target);
  void setDarkTheme(bool dark);

  // Workspaces (ui/workspace.h, main_window_workspace.cpp). Open/save return false with the
  // reason in lastError() (and a dialog unless headless).
  Workspace workspace() const;
  void applyWorkspace(const Workspace& w);
  bool openWorkspace(const QString& path);
  // Why the selection of the last workspace opened was not applied (a layer, head, segment,
  // map or query its run does not have, with the valid range); empty when it was.
  QString workspaceError() const { return m_workspaceError; }
  bool saveWorkspace(const QString& path);
  // Edit > Copy ... figure: the view as on screen, PNG and SVG on the clipboard.
  void copyFigure(const QString& view);
  // View > Command palette (Ctrl+K): every menu action, filtered as you type.
  CommandPalette* openCommandPalette();
  // The right-click menu of a main view ("heatmap", "model", "tokens").
  QMenu* viewContextMenu(const QString& view, int row = -1);

 signals:
  void modelReady(const QString& spec);
  void traceShown();     // after every run's views are updated
  void overviewShown();  // an overview computed on a worker thread has reached the views
  void firstRunShown();  // once
  void runError(const QString& message);

 protected:
  void closeEvent(QCloseEvent*) override;
  void dragEnterEvent(QDragEnterEvent*) override;
  void dropEvent(QDropEvent*) override;

 private:
  // main_window.cpp
  void buildUi();
  void buildSelectors(QWidget* bar);
  void connectRunner();
  void onTextChanged();
  void onRunFinished(std::shared_ptr<const RunResult> result, double ms);
  void onRunFailed(const QString& message);
  void clearRun();  // no result on screen (a failed run): every view empty
  void finishWorkspace();
  void installViewContextMenus();
  void markSearchMatches(HeatmapData& data, const AttentionMap& map) const;
  FigureContent viewFigure(const FigureSpec& spec) const;
  void openWorkspaceDialog();
  void saveWorkspaceDialog();
  void onModelLoaded(const QString& spec, std::shared_ptr<const Model> model);
  void onModelLoadFailed(const QString& spec, const QString& message);
  void refreshFamilies();
  void refreshHeadCombo();
  void updateModelView();
  int rowOfQuery(int token) const;  // the token's row in the map on screen, or -1
  void updateViews();
  // attentionHeatmap of the trace on screen; the overviews of maps computed on request (a pass
  // over the map each: half a second a head at 16k tokens) are kept for that trace, so going
  // back to a head is instant.
  HeatmapData heatmapOf(const AttentionSelection& sel);
  void dropOverviews();
  void updateStyles();
  ColorMapping currentMapping() const;
  void showError(const QString& message);
  void clearError();
  // main_window_menus.cpp
  void buildMenus();
  void rebuildRecentMenu();
  void addRecent(const QString& spec);
  void openFolder();
  void openImageDialog();
  void applyImageTokens();  // tokens of m_image for the current model, or leaves image mode
  void leaveImageMode();
  void onSourceEdited();
  void openModelFile();  // a .safetensors or .gguf file
  void openGallery();
  void exportView(const QString& view);
  void exportAllHeadsDialog();
  void showAbout();
  void showShortcuts();
  void restoreSettings();
  void saveSettings();
  void failHeadless(const QString& message);
  // main_window_panels.cpp
  void buildVariantPanels();
  void updateVariantPanels();
  void pushPanelContext();
  void updatePanelTraceOptions(bool force = false);
  // main_window_backend.cpp
  void buildBackendUi();
  void openBackendDialog();
  void updateBackendStatus();

  RunController* m_runner = nullptr;
  std::shared_ptr<const Model> m_model;
  std::shared_ptr<const RunResult> m_result;
  std::shared_ptr<const Trace> m_trace;
  std::vector<AttentionFamily> m_families;
  AttentionSelection m_sel;
  QString m_modelSpec;
  QString m_lastError;
  bool m_headless = false;
  bool m_firstShown = false;
  bool m_dark = false;
  bool m_updatingSelectors = false;
  int m_selectedQuery = -1;  // a token index of the query side
  int m_queryBegin = 0;      // first query token of the map on screen (an XL segment's start)
  int m_layerBase = 0;       // the layer spin shows layer + this (1 for Universal Transformer steps)
  QElapsedTimer m_runClock;

  QPlainTextEdit* m_source = nullptr;
  QPlainTextEdit* m_target = nullptr;
  QWidget* m_targetRow = nullptr;
  TokenChips* m_sourceChips = nullptr;
  TokenChips* m_targetChips = nullptr;
  QLabel* m_errorLabel = nullptr;
  QComboBox* m_familyCombo = nullptr;
  QSpinBox* m_layerSpin = nullptr;
  QSpinBox* m_segmentSpin = nullptr;  // Transformer-XL families only
  QComboBox* m_headCombo = nullptr;
  QComboBox* m_cmapCombo = nullptr;
  QComboBox* m_scaleCombo = nullptr;
  QComboBox* m_normCombo = nullptr;
  HeatmapView* m_heatmap = nullptr;
  ModelView* m_modelView = nullptr;
  TokenView* m_tokenView = nullptr;
  PositionalView* m_positional = nullptr;
  QDockWidget* m_modelDock = nullptr;
  QDockWidget* m_tokenDock = nullptr;
  QDockWidget* m_positionalDock = nullptr;
  QComboBox* m_tokenHeads = nullptr;
  QLabel* m_status = nullptr;
  QProgressBar* m_progress = nullptr;
  QLabel* m_memoryNote = nullptr;  // shown when a run holds more than half the available memory
  QToolButton* m_cancel = nullptr;
  QMenu* m_recentMenu = nullptr;
  QMenu* m_viewMenu = nullptr;
  std::vector<std::pair<QDockWidget*, VariantPanel*>> m_variantDocks;
  PatternView* m_patternView = nullptr;
  QLabel* m_backendLabel = nullptr;
  QDockWidget* m_patternDock = nullptr;
  std::shared_ptr<const RgbImage> m_image;  // image mode: the input image (null: text)
  QString m_imageName;
  ImageInputView* m_imageView = nullptr;  // created with the first image
  QDockWidget* m_imageDock = nullptr;
  ScorePanel* m_scorePanel = nullptr;
  QDockWidget* m_scoreDock = nullptr;
  SweepPanel* m_sweepPanel = nullptr;
  QDockWidget* m_sweepDock = nullptr;
  ComparePanel* m_comparePanel = nullptr;
  TokenSearchPanel* m_searchPanel = nullptr;
  QDockWidget* m_searchDock = nullptr;
  CorpusPanel* m_corpusPanel = nullptr;
  QVector<int> m_searchQueries, m_searchKeys;  // source positions the token search matches
  bool m_updatingPanels = false;  // inside updateVariantPanels
  QDockWidget* m_corpusDock = nullptr;
  QAction* m_valueWeightedAction = nullptr;  // View > Value-weighted attention
  QAction* m_sharedScaleAction = nullptr;    // View > Grid: one colour scale for all tiles
  QAction* m_mapStorageActions[3] = {};      // View > Attention maps, by MapStorage
  // The trace on screen's overviews (heatmapOf), by (array, head), and those being computed on a
  // worker thread; a new run or a cleared one drops both (dropOverviews).
  std::map<std::pair<std::string, int>, HeatmapData> m_overviews;
  std::map<std::pair<std::string, int>, QFutureWatcher<HeatmapData>*> m_overviewJobs;
  std::shared_ptr<Workspace> m_pendingWorkspace;  // being opened: its selection waits for the run
  QString m_workspaceError;
  QString m_workspacePath;
  QDockWidget* m_compareDock = nullptr;
  TrainingPanel* m_trainingPanel = nullptr;
  std::shared_ptr<AblationSpec> m_ablation;
  bool m_postRunLens = false, m_postRunAblation = false, m_postRunPerformer = false;  // what the ablation panel drops; null = nothing
};

}  // namespace atlas::ui
