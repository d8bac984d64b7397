#include "ui/views/overview_cache.h"

#include <QtConcurrent/QtConcurrentRun>

#include "ui/views/attention_heatmap.h"

namespace atlas::ui {

OverviewCache::OverviewCache(QObject* parent) : QObject(parent) { setObjectName("overviewCache"); }

void OverviewCache::clear() {
  m_overviews.clear();
  for (auto& [key, job] : m_jobs) job->deleteLater();  // a job still running: its result is dropped
  m_jobs.clear();
}

HeatmapData OverviewCache::heatmap(const std::shared_ptr<const Trace>& trace, const AttentionSelection& sel) {
  const AttentionMap* map = findAttentionMap(*trace, sel);
  if (!map || !heatmapIsOverview(*map, sel.head)) return attentionHeatmap(*trace, sel);
  const Key key = std::make_pair(map->array, sel.head);
  if (auto it = m_overviews.find(key); it != m_overviews.end()) return it->second;
  // An overview reads every weight of the map (0.5 s a head at 16k tokens, the mean of 4 heads
  // 2 s): computed on a worker thread, the views say so meanwhile and stay responsive.
  if (!m_jobs.count(key)) {
    auto* job = new QFutureWatcher<HeatmapData>(this);
    m_jobs[key] = job;
    connect(job, &QFutureWatcher<HeatmapData>::finished, this, [this, job, key] {
      job->deleteLater();
      auto it = m_jobs.find(key);
      if (it == m_jobs.end() || it->second != job) return;  // an earlier run's (clear)
      m_jobs.erase(it);
      constexpr size_t kKept = 16;  // about 5 MB each
      if (m_overviews.size() >= kKept) m_overviews.clear();
      m_overviews[key] = job->result();
      emit ready();
    });
    job->setFuture(QtConcurrent::run([trace, sel] {
      try {
        return attentionHeatmap(trace, sel);  // shares the trace: no copy of q and k per kept overview
      } catch (const std::exception& e) {  // said in the view, and kept so it is not retried
        HeatmapData failed;
        failed.emptyText = QString::fromStdString(e.what());
        return failed;
      }
    }));
  }
  HeatmapData pending;
  pending.title = QString::fromStdString(attention_map_title(*map));
  pending.emptyText = QString("computing an overview of %1 × %2 weights…")
                          .arg(map->queries.count)
                          .arg(map->keys.count);
  return pending;
}

}  // namespace atlas::ui
