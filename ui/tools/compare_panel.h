#pragma once
// "Compare" (View > Variant panels): the current run (A) against a second run (B) of another
// input on the same model, of the same input on another model of the same shape (two
// checkpoints, a model and its fine-tune), or both (core/analysis/attention_compare.h). Views
// (ui/tools/compare_view.h): A - B of the selected map and head in diverging colours, A | B side by
// side, and the per-head distance grid of the selected family; the selection is the main
// window's (linked), and a click on the grid selects that layer and head everywhere.
//
// B runs on a worker. Once compared, every new run of A re-runs B (B's input follows A's
// when no other text is given), so the panel never shows B against an older A; while the
// panel is hidden, B waits and runs once when it is shown again.
#include <QFutureWatcher>
#include <QJsonObject>
#include <QWidget>
#include <atomic>
#include <memory>

#include "core/model/model.h"
#include "ui/views/attention_selection.h"
#include "ui/views/heatmap_painter.h"

class QLabel;
class QLineEdit;
class QPushButton;

namespace atlas::ui {

class VariantPanel;

class ComparePanel : public QWidget {
  Q_OBJECT
 public:
  explicit ComparePanel(QWidget* parent = nullptr);
  ~ComparePanel() override;

  void setRun(std::shared_ptr<const Model> model, std::shared_ptr<const Trace> trace);  // run A
  void setSelection(const AttentionSelection& sel);
  void setStyle(const HeatmapStyle& style, bool dark);
  // B's model (a model spec as for --model; empty = A's model) and text (empty = A's input).
  void setB(const QString& modelSpec, const QString& text);
  // Runs B (as the Compare button does); false with the reason in status() when it cannot.
  bool compare();
  void stop();  // no more comparing: B is dropped and not re-run
  bool isRunning() const;
  std::shared_ptr<const Trace> traceB() const { return m_traceB; }
  QString status() const;
  VariantPanel* plotPanel() const { return m_plots; }
  std::shared_ptr<const Trace> traceA() const { return m_trace; }
  std::shared_ptr<const Model> modelA() const { return m_model; }
  bool comparing() const { return m_active; }
  // B's model spec, text and whether the panel compares, for a workspace. B's run is not stored
  // (one forward): a restored panel that was comparing runs B again against the run on screen.
  // A damaged state, or a B model whose file or folder is gone, is refused in status() and
  // false returned; the panel then keeps B's fields but does not compare.
  QJsonObject saveState() const;
  bool restoreState(const QJsonObject& state);

 signals:
  void layerPicked(int layer);
  void headPicked(int head);
  void tokenPicked(int token);
  void compared();  // B's run ended: a result, or a reason in status()

 private:
  struct Outcome {
    std::shared_ptr<const Model> model;  // B's model when loaded from a spec
    std::shared_ptr<const RunResult> result;
    QString error;
  };
  void onRunDone();
  void setStatus(const QString& text);

 protected:
  void showEvent(QShowEvent* e) override;

  std::shared_ptr<const Model> m_model;
  std::shared_ptr<const Trace> m_trace;
  std::shared_ptr<const Model> m_modelB;  // loaded from m_modelBSpec
  QString m_modelBSpec;
  std::shared_ptr<const RunResult> m_resultB;
  std::shared_ptr<const Trace> m_traceB;
  AttentionSelection m_sel;
  bool m_active = false;  // compared at least once and not stopped: re-run B with A
  bool m_rerun = false;   // A changed while B was running
  bool m_stale = false;   // A changed while the panel was hidden: B runs when it is shown
  QLineEdit* m_modelEdit;
  QLineEdit* m_textEdit;
  QPushButton* m_compare;
  QPushButton* m_stop;
  QLabel* m_status;
  VariantPanel* m_plots;
  QFutureWatcher<Outcome> m_watcher;
  std::shared_ptr<std::atomic<bool>> m_cancelFlag;
};

}  // namespace atlas::ui
