#include "ui/views/map_overview.h"

#include <algorithm>

#include "core/model/attention_on_demand.h"
#include "core/tensor/error.h"
#include "ui/views/attention_heatmap.h"
#include "ui/views/map_matrix.h"

namespace atlas::ui {

namespace {

// Exact windows of one head (or aggregate) of an on-demand map, from its own copy of the
// queries and keys (a view may keep it after the run it came from is gone).
class OnDemandDetail : public HeatmapDetail {
 public:
  OnDemandDetail(std::shared_ptr<const OnDemandMap> map, int64_t head, QStringList rowLabels,
                 QStringList colLabels, QString title, float valueMax)
      : m_map(std::move(map)), m_head(head), m_rowLabels(std::move(rowLabels)),
        m_colLabels(std::move(colLabels)), m_title(std::move(title)), m_valueMax(valueMax) {}

  HeatmapData window(int r0, int r1, int c0, int c1) const override {
    HeatmapData d;
    d.rows = r1 - r0;
    d.cols = c1 - c0;
    d.values = m_map->tile(m_head, r0, r1, c0, c1);
    d.mask.resize(d.values.size());
    bool any = false;
    for (int i = r0; i < r1; ++i)
      for (int j = c0; j < c1; ++j) {
        const bool ok = m_map->allowed(i, j);
        d.mask[size_t(i - r0) * d.cols + (j - c0)] = ok ? 1 : 0;
        any = any || !ok;
      }
    if (!any) d.mask.clear();
    d.rowLabels = m_rowLabels.mid(r0, d.rows);
    d.colLabels = m_colLabels.mid(c0, d.cols);
    d.rowAxis = "query";
    d.colAxis = "key";
    d.title = m_title;
    d.rowOrigin = r0;
    d.colOrigin = c0;
    d.fullRows = static_cast<int>(m_map->queries());
    d.fullCols = static_cast<int>(m_map->keys());
    d.valueMax = m_valueMax;
    return d;
  }

 private:
  std::shared_ptr<const OnDemandMap> m_map;
  int64_t m_head;
  QStringList m_rowLabels, m_colLabels;
  QString m_title;
  float m_valueMax;
};

// "812-827": the tokens a block of an overview covers.
QStringList blockLabels(int total, int step) {
  QStringList out;
  for (int b = 0; b < total; b += step) out << QString("%1\u2013%2").arg(b).arg(std::min(total, b + step) - 1);
  return out;
}

// An on-demand map too large to hold whole: block maxima over at most kOverviewCells cells a
// side (one pass over the map), with a detail that computes exact windows.
constexpr int64_t kOverviewCells = 1024;

int64_t overviewStep(const AttentionMap& m) {
  return (std::max(m.queries.count, m.keys.count) + kOverviewCells - 1) / kOverviewCells;
}

int64_t headSelector(int head) {
  return head >= 0 ? head : head == HeadMean ? OnDemandMap::kMeanOfHeads : OnDemandMap::kMaxOfHeads;
}

// The overview of `head` from its block maxima and first-key weights (OnDemandMap::pooled).
HeatmapData overviewOf(const Trace& trace, const AttentionMap& m, const std::shared_ptr<const OnDemandMap>& map,
                       int head, std::vector<float> values, const std::vector<uint8_t>& masked,
                       const std::vector<float>& firstKey) {
  const int64_t lq = m.queries.count, lk = m.keys.count, step = overviewStep(m);
  HeatmapData d;
  d.values = std::move(values);
  d.rows = static_cast<int>((lq + step - 1) / step);
  d.cols = static_cast<int>((lk + step - 1) / step);
  d.mask.resize(masked.size());
  for (size_t t = 0; t < masked.size(); ++t) d.mask[t] = masked[t] ? 0 : 1;
  if (std::find(masked.begin(), masked.end(), uint8_t(1)) == masked.end()) d.mask.clear();
  // The sink as attention_sink computes it: over the rows that see any key (their weights sum
  // to one; a row seeing none is all zero).
  double sinkSum = 0;
  int64_t seeing = 0;
  for (int64_t i = 0; i < lq; ++i) {
    bool any = false;
    for (int64_t j = 0; j < lk && !any; ++j) any = map->allowed(i, j);
    if (!any) continue;
    sinkSum += firstKey[size_t(i)];
    ++seeing;
  }
  d.sink = seeing > 0 ? sinkSum / double(seeing) : 0.0;
  d.rowStep = d.colStep = static_cast<int>(step);
  d.fullRows = static_cast<int>(lq);
  d.fullCols = static_cast<int>(lk);
  d.rowLabels = blockLabels(d.fullRows, d.rowStep);
  d.colLabels = blockLabels(d.fullCols, d.colStep);
  d.rowAxis = "queries";
  d.colAxis = "keys";
  d.valueName = "largest weight in block";
  d.valueMax = d.values.empty() ? 0.0f : *std::max_element(d.values.begin(), d.values.end());
  const QString title = QString("%1, %2").arg(QString::fromStdString(attention_map_title(m)), headName(head));
  d.title = title + QString(" (blocks of %1 x %1 tokens; zoom in for every weight)").arg(step);
  d.detail = std::make_shared<OnDemandDetail>(map, headSelector(head), queryLabelsOf(trace, m), keyLabelsOf(trace, m),
                                              title, d.valueMax);
  return d;
}

}  // namespace

HeatmapData onDemandOverview(const Trace& trace, const AttentionMap& m, const AttentionSelection& sel,
                             const std::shared_ptr<const Trace>& shared) {
  if (sel.head >= m.heads)
    throw AtlasError("'" + m.array + "' has " + std::to_string(m.heads) + " heads; head " +
                     std::to_string(sel.head) + " does not exist");
  auto map = shared ? std::make_shared<const OnDemandMap>(shared, m)
                    : std::make_shared<const OnDemandMap>(trace, m, /*own_copy=*/true);
  std::vector<uint8_t> masked;
  std::vector<float> firstKey;
  std::vector<float> values = map->block_max(headSelector(sel.head), overviewStep(m), overviewStep(m), &masked, &firstKey);
  return overviewOf(trace, m, map, sel.head, std::move(values), masked, firstKey);
}


std::vector<HeatmapData> onDemandOverviews(const Trace& trace, const AttentionSelection& sel) {
  const AttentionMap& m = requireAttentionMap(trace, sel);
  if (!heatmapIsOverview(m, HeadMean)) return {};
  auto map = std::make_shared<const OnDemandMap>(trace, m, /*own_copy=*/true);
  std::vector<uint8_t> masked;
  std::vector<std::vector<float>> firstKeys;
  std::vector<std::vector<float>> all = map->block_max_all(overviewStep(m), overviewStep(m), &masked, &firstKeys);
  std::vector<HeatmapData> out;
  for (size_t s = 0; s < all.size(); ++s) {
    const int head = s < size_t(m.heads) ? int(s) : s == size_t(m.heads) ? int(HeadMean) : int(HeadMax);
    out.push_back(overviewOf(trace, m, map, head, std::move(all[s]), masked, firstKeys[s]));
  }
  return out;
}

}  // namespace atlas::ui
