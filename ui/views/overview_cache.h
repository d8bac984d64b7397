#pragma once
// The heatmaps of the trace on screen, with the overviews of maps computed on request (a pass
// over the map each: half a second a head at 16k tokens, 2 s for the mean of 4 heads) computed
// on a worker thread and kept for that trace, so the window stays responsive and going back to
// a head is instant.
#include <QFutureWatcher>
#include <QObject>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "ui/views/attention_selection.h"
#include "ui/views/heatmap_data.h"

namespace atlas::ui {

class OverviewCache : public QObject {
  Q_OBJECT
 public:
  explicit OverviewCache(QObject* parent = nullptr);

  // attentionHeatmap of `trace`; an overview not computed yet comes back empty with its title
  // and a "computing an overview…" text while a worker computes it (ready follows).
  HeatmapData heatmap(const std::shared_ptr<const Trace>& trace, const AttentionSelection& sel);
  // Forgets the overviews (a new run, or none); a worker still running has its result dropped.
  void clear();
  bool pending() const { return !m_jobs.empty(); }  // an overview is being computed

 signals:
  void ready();  // an overview computed on a worker is in: the views can show it

 private:
  using Key = std::pair<std::string, int>;  // (array, head)
  std::map<Key, HeatmapData> m_overviews;
  std::map<Key, QFutureWatcher<HeatmapData>*> m_jobs;
};

}  // namespace atlas::ui
