#pragma once
// What the window's parts (panel docks, tools, the image input, figure actions) see of the
// window: the run on screen (model, trace), the linked selection (map, layer, head, selected
// query), and requests back to the window (select, run again). The window owns the state and
// applies requests (it clamps a selection to the run's maps); the parts never reach its members.
#include <QObject>
#include <QString>
#include <memory>

#include "core/model/model.h"
#include "ui/views/attention_selection.h"

namespace atlas::ui {

class WindowSession : public QObject {
  Q_OBJECT
 public:
  using QObject::QObject;

  std::shared_ptr<const Model> model() const { return m_model; }
  QString modelSpec() const { return m_modelSpec; }
  // The run on screen; null before the first run and after a failed one.
  std::shared_ptr<const Trace> trace() const { return m_trace; }
  AttentionSelection selection() const { return m_selection; }
  int query() const { return m_query; }  // a token position of the query side, -1 = none
  // The heatmap cell last clicked, as token positions of its query and key (-1 = none). Unlike
  // query() it stays when a second click on the row unpins it.
  int cellQuery() const { return m_cellQuery; }
  int cellKey() const { return m_cellKey; }

  // The window's side: a model in, a run on screen (its trace shares the result's lifetime;
  // null: no run), the selection and query it shows. setRun emits runShown; the others emit
  // selectionShown when something changed.
  void setModel(std::shared_ptr<const Model> model, const QString& spec);
  void setRun(std::shared_ptr<const RunResult> result, const AttentionSelection& selection);
  void setSelection(const AttentionSelection& selection);
  void setQuery(int token);
  void setCell(int query, int key);

  // The parts' side: requests the window applies.
  void requestSelection(const AttentionSelection& selection) { emit selectionRequested(selection); }
  void requestLayer(int layer);
  void requestHead(int head);
  void requestQuery(int token) { emit queryRequested(token); }
  void requestRun() { emit runRequested(); }  // the input again (e.g. other arrays traced)

 signals:
  void runShown();
  void selectionShown();
  void selectionRequested(const AttentionSelection& selection);
  void queryRequested(int token);
  void runRequested();

 private:
  std::shared_ptr<const Model> m_model;
  QString m_modelSpec;
  std::shared_ptr<const Trace> m_trace;  // shares the run's result's lifetime
  AttentionSelection m_selection;
  int m_query = -1;
  int m_cellQuery = -1, m_cellKey = -1;
};

}  // namespace atlas::ui
