#pragma once
// "Corpus" (View > Variant panels): corpus mode in the app (core/analysis/corpus_index.h, the
// same runs and files as `atlas corpus`): the current model over a text file of documents, one
// per line, with a progress bar and Cancel; running again into the same folder resumes where it
// stopped. Then queries over the index: the strongest links of a layer and head (the selected
// ones, or every one), optionally from a query token to a key token, each with its document
// context, in a table.
#include <QFutureWatcher>
#include <QJsonObject>
#include <QWidget>
#include <atomic>
#include <memory>
#include <optional>

#include "core/analysis/corpus_index.h"
#include "core/analysis/corpus_query.h"

class QCheckBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTableWidget;

namespace atlas::ui {

class CorpusPanel : public QWidget {
  Q_OBJECT
 public:
  explicit CorpusPanel(QWidget* parent = nullptr);
  ~CorpusPanel() override;

  // The model corpus runs use, and its spec as recorded in the run's manifest. Another model
  // clears the links on screen (they belong to the run that made the index), with the reason.
  void setModel(std::shared_ptr<const Model> model, const QString& spec);
  void setSelection(int layer, int head);  // "Selected layer and head" queries follow it
  void setPaths(const QString& corpusFile, const QString& outDir);
  void setQuery(const QString& queryToken, const QString& keyToken, bool selectedHeadOnly);

  bool start();  // Run / resume; false with the reason in status()
  void cancel();
  bool isRunning() const;
  // Opens the index in the output folder and fills the table; false with the reason.
  bool query();
  const std::optional<CorpusIndex>& index() const { return m_index; }
  const std::vector<CorpusLinkMatch>& matches() const { return m_matches; }
  QTableWidget* table() const { return m_table; }
  QString status() const;
  // The inputs (text file, output folder, links per head, query and key tokens, selected head
  // only), for a workspace; the links are in the folder, read again by Find links. A damaged
  // state is refused in status(), the panel keeping its inputs.
  QJsonObject saveState() const;
  void restoreState(const QJsonObject& state);
  std::shared_ptr<const Model> model() const { return m_model; }  // what Run uses

 signals:
  void finished();  // a run ended: finished, cancelled (state saved) or failed; see status()

 private:
  struct Outcome {
    CorpusRunResult result;
    QString error;
  };
  void onRunDone();
  void setStatus(const QString& text);

  std::shared_ptr<const Model> m_model;
  std::shared_ptr<const Model> m_runModel;  // of the run in flight
  QString m_spec;
  int m_layer = 0, m_head = 0;
  QLineEdit* m_file;
  QLineEdit* m_out;
  QSpinBox* m_top;
  QPushButton* m_run;
  QPushButton* m_cancel;
  QProgressBar* m_progress;
  QLineEdit* m_queryToken;
  QLineEdit* m_keyToken;
  QCheckBox* m_selectedOnly;
  QTableWidget* m_table;
  QLabel* m_status;
  QFutureWatcher<Outcome> m_watcher;
  std::shared_ptr<std::atomic<bool>> m_cancelFlag;
  std::optional<CorpusIndex> m_index;
  std::vector<CorpusLinkMatch> m_matches;
};

}  // namespace atlas::ui
