#pragma once
// The panels' docks in the window: the pattern view, one dock per variant or analysis panel
// (ui/panels/panel_registry.h), the score functions, and the tools (ablation sweep, activation
// patching, logit attribution, QK decomposition, compare, token search, corpus). Each follows the run on screen and the linked selection through the
// WindowSession and sends its picks (layer, head, token) back through it. A variant panel shows
// itself when a run first has its arrays. Some panels need more than the default trace, and
// only while they are open: Transformer-XL and rotary positions the score terms
// (TraceOptions::scores), the logit lens the hidden states plus add_logit_lens on the worker,
// the ablation panel a second (ablated) run on the worker, the Performer panel its study, the
// score functions and the query-key embedding the projected queries and keys (TraceOptions::qk).
#include <QJsonObject>
#include <QObject>
#include <QVector>
#include <memory>
#include <utility>
#include <vector>

class QDockWidget;
class QMainWindow;
class QMenu;

namespace atlas {
struct AblationSpec;
}

namespace atlas::ui {

class AblationControls;
class ComparePanel;
class CorpusPanel;
class DlaPanel;
class PatchingPanel;
class PatternView;
class QkDecompositionPanel;
class RunController;
class ScorePanel;
class SweepPanel;
class TokenSearchPanel;
class VariantPanel;
class WindowSession;
struct HeatmapStyle;

class PanelDocks : public QObject {
  Q_OBJECT
 public:
  // Docks everything into `window` (the pattern view tabbed after `tabAfter`), lists the
  // panels in `viewMenu` (the pattern view before `viewMenuBefore`, the rest under Variant
  // panels) and sets `runner`'s trace options and post-run step for the open panels.
  PanelDocks(QMainWindow* window, WindowSession* session, RunController* runner, QMenu* viewMenu,
             QDockWidget* tabAfter);

  void setStyle(const HeatmapStyle& style, bool dark);
  // View > Value-weighted attention: the run traces the value norms (re-runs once).
  void setValueNorms(bool on);
  // The tool panels let go of the run on screen (their results with it) until the next run is
  // shown: a workspace being opened restores results that wait for its own model's run, never
  // for the run of the model before (which may have the same tokens).
  void detachTools();
  // The ablation panel's inputs and whether they are compared (the ablated run beside this one),
  // for a workspace's tools.ablation; empty when nothing was typed or compared.
  QJsonObject ablationState() const;
  // Gives them back and compares again when they were compared; returns why not ("" when done).
  QString restoreAblationState(const QJsonObject& state);

 signals:
  // The token search's matches (source positions), empty when it closes; showNow is false
  // during a run's update (the run's own repaint follows).
  void searchMatchesChanged(const QVector<int>& queries, const QVector<int>& keys, bool showNow);

 private:
  void showRun();
  void followSelection();
  void updateTraceOptions(bool force = false);

  QMainWindow* m_window;
  WindowSession* m_session;
  RunController* m_runner;
  std::vector<std::pair<QDockWidget*, VariantPanel*>> m_variantDocks;
  PatternView* m_pattern;
  ScorePanel* m_scores = nullptr;
  QDockWidget* m_scoreDock = nullptr;
  SweepPanel* m_sweep = nullptr;
  ComparePanel* m_compare = nullptr;
  TokenSearchPanel* m_search = nullptr;
  QDockWidget* m_searchDock = nullptr;
  CorpusPanel* m_corpus = nullptr;
  PatchingPanel* m_patching = nullptr;
  DlaPanel* m_dla = nullptr;
  QkDecompositionPanel* m_qk = nullptr;
  AblationControls* m_ablationControls = nullptr;
  std::shared_ptr<AblationSpec> m_ablation;  // what the ablation panel drops; null = nothing
  bool m_valueNorms = false;
  bool m_updating = false;  // inside showRun
  bool m_postRunLens = false, m_postRunAblation = false, m_postRunPerformer = false;
};

}  // namespace atlas::ui
