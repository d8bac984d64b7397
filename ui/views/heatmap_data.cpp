#include "ui/views/heatmap_data.h"

#include "core/analysis/attention_flow.h"
#include "core/analysis/attention_rollout.h"
#include "core/analysis/value_weighted.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/model/attention_on_demand.h"
#include "core/tensor/error.h"
#include "core/model/model_arrays.h"
#include "ui/export/svg_writer.h"

namespace atlas::ui {

QString AttentionFamily::label() const {  // "decoder cross-attention": the core's wording
  AttentionMap m;
  m.stack = stack.toStdString();
  m.sublayer = kind.toStdString();
  return QString::fromStdString(attention_family_label(m));
}

std::vector<AttentionFamily> attentionFamilies(const Trace& trace) {
  std::vector<AttentionFamily> out;
  for (const AttentionMap& m : trace.attention_maps) {
    // One LSH hash round on its own: the layer's map is the rounds combined (round -1).
    if (m.round >= 0) continue;
    const QString stack = QString::fromStdString(m.stack), kind = QString::fromStdString(m.sublayer);
    auto it = std::find_if(out.begin(), out.end(), [&](const AttentionFamily& f) {
      return f.stack == stack && f.kind == kind;
    });
    if (it == out.end()) {
      out.push_back({stack, kind, 0, 0});
      it = out.end() - 1;
    }
    if (m.step >= 0) {
      it->steps = true;
      it->layers = std::max(it->layers, static_cast<int>(m.step));
    } else {
      it->layers = std::max(it->layers, static_cast<int>(m.layer) + 1);
    }
    if (m.segment >= 0) it->segments = std::max(it->segments, static_cast<int>(m.segment) + 1);
    it->heads = std::max(it->heads, static_cast<int>(m.heads));
    it->kvHeads = std::max(it->kvHeads, static_cast<int>(m.kv_heads));
  }
  return out;
}

const AttentionFamily* findFamily(const std::vector<AttentionFamily>& families, const QString& stack,
                                  const QString& kind) {
  for (const AttentionFamily& f : families)
    if (f.stack == stack && f.kind == kind) return &f;
  return nullptr;
}

const AttentionMap* findAttentionMap(const Trace& trace, const AttentionSelection& sel) {
  const std::string stack = sel.stack.toStdString(), sublayer = sel.kind.toStdString();
  for (const AttentionMap& m : trace.attention_maps) {
    if (m.round >= 0 || m.stack != stack || m.sublayer != sublayer) continue;
    if (m.segment >= 0 && m.segment != sel.segment) continue;
    if (m.step >= 0 ? m.step != sel.layer + 1 : m.layer != sel.layer) continue;
    return &m;
  }
  return nullptr;
}

namespace {

// "the trace has no decoder self-attention, segment 9, layer 0 ('decoder.seg9.layer0.self_attn');
// it has segments 0 to 2 and layers 0 to 1": what was asked for and what there is to choose.
std::string missingMapMessage(const Trace& trace, const AttentionSelection& sel) {
  const auto families = attentionFamilies(trace);
  const AttentionFamily* f = findFamily(families, sel.stack, sel.kind);
  if (!f) {
    std::string have;
    for (const AttentionFamily& g : families) have += (have.empty() ? "" : ", ") + g.label().toStdString();
    return "the trace has no " + AttentionFamily{sel.stack, sel.kind}.label().toStdString() + " (" +
           (have.empty() ? std::string("this model records no attention over tokens")
                         : "it has: " + have) +
           ")";
  }
  AttentionMap want;
  want.stack = sel.stack.toStdString();
  want.sublayer = sel.kind.toStdString();
  want.layer = f->steps ? 0 : sel.layer;
  want.step = f->steps ? sel.layer + 1 : -1;
  want.segment = f->segments > 0 ? sel.segment : -1;
  std::string s = "the trace has no " + attention_map_title(want) + " ('" + attention_array_name(want) +
                  "'); it has ";
  if (f->segments > 0) s += "segments 0 to " + std::to_string(f->segments - 1) + " and ";
  s += f->steps ? "steps 1 to " + std::to_string(f->layers)
                : "layers 0 to " + std::to_string(f->layers - 1);
  return s;
}

const AttentionMap& requireMap(const Trace& trace, const AttentionSelection& sel) {
  const AttentionMap* m = findAttentionMap(trace, sel);
  if (!m) throw AtlasError(missingMapMessage(trace, sel));
  return *m;
}

}  // namespace

std::string attentionArrayName(const Trace& trace, const AttentionSelection& sel) {
  return requireMap(trace, sel).array;
}

bool rolloutApplies(const Trace& trace, const AttentionFamily& family, int segment) {
  if (!family.isSelfAttention() || family.layers <= 0) return false;
  int64_t n = -1;
  for (int l = 0; l < family.layers; ++l) {
    const AttentionMap* m = findAttentionMap(trace, {family.stack, family.kind, l, 0, segment});
    // R_l = A'_l R_{l-1} needs every layer's keys to be the tokens its queries are.
    if (!m || m->memory_keys > 0 || m->queries.side != m->keys.side || m->queries.begin != m->keys.begin ||
        m->queries.count != m->keys.count || (n >= 0 && m->queries.count != n))
      return false;
    n = m->queries.count;
  }
  return true;
}

QString headName(int head) {
  switch (head) {
    case HeadMean: return "mean over heads";
    case HeadMax: return "max over heads";
    case HeadRollout: return "attention rollout";
    case HeadFlow: return "attention flow (max-flow)";
    case HeadSink: return "attention sink (mean weight on the first key)";
    default: return QString("head %1").arg(head);
  }
}

QString headShortName(int head) {
  switch (head) {
    case HeadMean: return "mean";
    case HeadMax: return "max";
    case HeadRollout: return "rollout";
    case HeadFlow: return "flow";
    case HeadSink: return "sink";
    default: return QString("H%1").arg(head);
  }
}

int HeatmapData::rankInRow(int r, int c) const {
  const float v = at(r, c);
  int rank = 1;
  for (int j = 0; j < cols; ++j)
    if (j != c && !masked(r, j) && at(r, j) > v) ++rank;
  return rank;
}

QString displayLabel(const std::string& label) {
  if (label.empty()) return QStringLiteral("\u2205");
  QString s = QString::fromStdString(label);
  s.replace(' ', QChar(0x2423));    // open box: a visible space
  s.replace('\n', QChar(0x21B5));   // return arrow
  s.replace('\t', QChar(0x21E5));   // tab arrow
  return figureText(s);             // other controls as their symbols: U+0001 -> U+2401
}

QStringList queryLabelsOf(const Trace& trace, const AttentionMap& map) {
  QStringList out;
  for (const std::string& l : query_labels(trace, map)) out << displayLabel(l);
  return out;
}

QStringList keyLabelsOf(const Trace& trace, const AttentionMap& map) {
  QStringList out;
  const std::vector<std::string> keys = key_labels(trace, map);
  for (size_t j = 0; j < keys.size(); ++j)
    out << (static_cast<int64_t>(j) < map.memory_keys ? kMemoryKeyMark : QString()) + displayLabel(keys[j]);
  return out;
}

namespace {

// Densifying a CSR-only map (traced that way because it is long) costs Lq x Lk floats per
// head: refuse beyond what a heatmap can sensibly hold rather than exhaust memory.
constexpr int64_t kMaxDensifiedCells = int64_t(8192) * 8192;

const TracedArray& requireTraced(const Trace& trace, const std::string& name) {
  const TracedArray* a = trace.find(name);
  if (!a) throw AtlasError("the trace has no array '" + name + "' (this model does not record it)");
  return *a;
}

// Head h of a map as [Lq, Lk] values. A dense map is a slice of its array; a CSR-only map has
// its nonzeros spread over zeros, and `allowed` (when given, [Lq, Lk]) gets 1 at the head's own
// nonzeros (all of the union's when the trace has no per-head `.allowed`).
std::vector<float> mapHead(const Trace& trace, const AttentionMap& m, int64_t h, std::vector<uint8_t>* allowed) {
  const int64_t lq = m.queries.count, lk = m.keys.count;
  if (m.on_demand && !m.dense) {  // computed from the traced queries and keys
    if (lq * lk > kMaxDensifiedCells)
      throw AtlasError("'" + m.array + "' is " + std::to_string(lq) + " x " + std::to_string(lk) +
                       " (computed on request): too large to hold whole");
    const OnDemandMap od(trace, m);
    if (allowed)
      for (int64_t i = 0; i < lq; ++i)
        for (int64_t j = 0; j < lk; ++j) (*allowed)[size_t(i * lk + j)] = od.allowed(i, j) ? 1 : 0;
    return od.rows(h, 0, lq);
  }
  if (m.dense) {
    const TracedArray& a = requireTraced(trace, m.array);
    if (a.tensor.shape != Shape{m.heads, lq, lk})
      throw AtlasError("array '" + m.array + "' has shape " + shape_str(a.tensor.shape) + ", its description [" +
                       std::to_string(m.heads) + ", " + std::to_string(lq) + ", " + std::to_string(lk) + "]");
    const auto first = a.tensor.data.begin() + h * lq * lk;
    return std::vector<float>(first, first + lq * lk);
  }
  if (lq * lk > kMaxDensifiedCells)
    throw AtlasError("'" + m.array + "' is " + std::to_string(lq) + " x " + std::to_string(lk) +
                     " (traced sparse only): too large for a heatmap; the Pattern view draws its connectivity");
  const Tensor& indptr = requireTraced(trace, m.array + ".indptr").tensor;    // [Lq + 1]
  const Tensor& indices = requireTraced(trace, m.array + ".indices").tensor;  // [nnz]
  const Tensor& values = requireTraced(trace, m.array + ".values").tensor;    // [heads, nnz]
  const TracedArray* own = trace.find(m.array + ".allowed");                 // [heads, nnz]
  const int64_t nnz = indices.numel();
  if (indptr.numel() != lq + 1 || values.shape != Shape{m.heads, nnz} || (own && own->tensor.shape != values.shape))
    throw AtlasError("the CSR arrays of '" + m.array + "' do not match " + std::to_string(lq) + " queries and " +
                     std::to_string(m.heads) + " heads");
  std::vector<float> out(static_cast<size_t>(lq * lk), 0.0f);
  for (int64_t i = 0; i < lq; ++i)
    for (auto k = static_cast<int64_t>(indptr.data[size_t(i)]); k < static_cast<int64_t>(indptr.data[size_t(i + 1)]); ++k) {
      const int64_t j = k >= 0 && k < nnz ? static_cast<int64_t>(indices.data[size_t(k)]) : -1;
      if (j < 0 || j >= lk)
        throw AtlasError("the CSR arrays of '" + m.array + "' point outside [" + std::to_string(lq) + ", " +
                         std::to_string(lk) + "]");
      if (own && own->tensor.data[size_t(h * nnz + k)] == 0.0f) continue;  // another head's nonzero
      out[size_t(i * lk + j)] = values.data[size_t(h * nnz + k)];
      if (allowed) (*allowed)[size_t(i * lk + j)] = 1;
    }
  return out;
}

std::vector<float> mapHeadMean(const Trace& trace, const AttentionMap& m) {
  std::vector<float> out(static_cast<size_t>(m.queries.count * m.keys.count), 0.0f);
  for (int64_t h = 0; h < m.heads; ++h) {
    const std::vector<float> a = mapHead(trace, m, h, nullptr);
    for (size_t i = 0; i < out.size(); ++i) out[i] += a[i];
  }
  for (auto& v : out) v /= static_cast<float>(std::max<int64_t>(1, m.heads));
  return out;
}

void setMapLabels(HeatmapData& d, const Trace& trace, const AttentionMap& m) {
  d.rowLabels = queryLabelsOf(trace, m);
  d.colLabels = keyLabelsOf(trace, m);
  d.rowAxis = "query";
  d.colAxis = "key";
}

void copyMask(HeatmapData& d, const Trace& trace, const std::string& maskName) {
  const TracedArray* m = maskName.empty() ? nullptr : trace.find(maskName);
  if (!m || m->tensor.numel() != static_cast<int64_t>(d.rows) * d.cols) return;
  d.mask.resize(m->tensor.data.size());
  for (size_t i = 0; i < d.mask.size(); ++i) d.mask[i] = m->tensor.data[i] != 0.0f ? 1 : 0;
}

// "decoder self-attention, segment 1" (+ ", " for what follows): a family within one segment.
QString familyTitle(const AttentionFamily& f, int segment) {
  return f.segments > 0 ? QString("%1, segment %2").arg(f.label()).arg(segment) : f.label();
}

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

// `shared` (optional): the trace as shared, so the overview's exact windows read its queries and
// keys in place (keeping it alive) instead of a copy of their own.
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

}  // namespace

bool heatmapIsOverview(const AttentionMap& m, int head) {
  return head >= HeadMax && m.on_demand && !m.dense && m.queries.count * m.keys.count > kExactHeatmapCells;
}

HeatmapData attentionHeatmap(const std::shared_ptr<const Trace>& trace, const AttentionSelection& sel) {
  if (sel.head >= HeadMax)
    if (const AttentionMap& m = requireMap(*trace, sel); heatmapIsOverview(m, sel.head))
      return onDemandOverview(*trace, m, sel, trace);
  return attentionHeatmap(*trace, sel);
}

HeatmapData attentionHeatmap(const Trace& trace, const AttentionSelection& sel) {
  if (sel.head == HeadRollout) return rolloutHeatmap(trace, sel);
  if (sel.head == HeadFlow) return flowHeatmap(trace, sel);
  const AttentionMap& m = requireMap(trace, sel);
  const int64_t H = m.heads, n = m.queries.count * m.keys.count;
  if (heatmapIsOverview(m, sel.head)) return onDemandOverview(trace, m, sel, nullptr);
  HeatmapData d;
  d.rows = static_cast<int>(m.queries.count);
  d.cols = static_cast<int>(m.keys.count);
  std::vector<uint8_t> allowed;
  if (!m.dense) allowed.assign(static_cast<size_t>(n), 0);  // CSR: masked = not a nonzero
  if (sel.head >= 0) {
    if (sel.head >= H)
      throw AtlasError("'" + m.array + "' has " + std::to_string(H) + " heads; head " +
                       std::to_string(sel.head) + " does not exist");
    d.values = mapHead(trace, m, sel.head, m.dense ? nullptr : &allowed);
  } else if (sel.head == HeadMean) {
    d.values.assign(static_cast<size_t>(n), 0.0f);
    for (int64_t h = 0; h < H; ++h) {
      const std::vector<float> a = mapHead(trace, m, h, m.dense ? nullptr : &allowed);
      for (int64_t i = 0; i < n; ++i) d.values[size_t(i)] += a[size_t(i)];
    }
    for (auto& v : d.values) v /= static_cast<float>(std::max<int64_t>(1, H));
  } else {
    for (int64_t h = 0; h < H; ++h) {
      const std::vector<float> a = mapHead(trace, m, h, m.dense ? nullptr : &allowed);
      if (h == 0) d.values = a;
      for (int64_t i = 0; i < n; ++i) d.values[size_t(i)] = std::max(d.values[size_t(i)], a[size_t(i)]);
    }
  }
  if (m.dense) copyMask(d, trace, m.mask);
  else d.mask = std::move(allowed);
  if (std::find(d.mask.begin(), d.mask.end(), uint8_t(0)) == d.mask.end()) d.mask.clear();  // all allowed: fast path
  setMapLabels(d, trace, m);
  d.title = QString("%1, %2").arg(QString::fromStdString(attention_map_title(m)), headName(sel.head));
  return d;
}

std::vector<HeatmapData> onDemandOverviews(const Trace& trace, const AttentionSelection& sel) {
  const AttentionMap& m = requireMap(trace, sel);
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

std::vector<std::vector<float>> attentionRolloutPrefixes(const std::vector<std::vector<float>>& layers,
                                                         int n) {
  // Abnar & Zuidema (2020), "Quantifying Attention Flow in Transformers": the residual
  // connection is modelled by mixing each layer's (head-averaged) attention with the identity,
  // A' = rownorm(0.5 A + 0.5 I), and attention is propagated through the stack by the matrix
  // product R_l = A'_l R_{l-1}, R_0 = A'_0. Row i of R_l says how much of layer l's output at
  // position i traces back to each input token.
  std::vector<std::vector<float>> out;
  Mat r;  // [n, n] rollout so far
  for (size_t l = 0; l < layers.size(); ++l) {
    const Tensor mixed = residual_mix(layers[l].data(), n);
    const Mat a = mixed.mat();
    r = l == 0 ? a : Mat(a * r);
    out.emplace_back(r.data(), r.data() + r.size());
  }
  return out;
}

std::vector<float> attentionRollout(const std::vector<std::vector<float>>& layers, int n) {
  auto all = attentionRolloutPrefixes(layers, n);
  return all.empty() ? std::vector<float>{} : std::move(all.back());
}

namespace {

// The head-averaged maps of sel's family, layers 0..lastLayer, for rollout and flow: square
// self-attention over the same tokens in every layer. `first` receives layer 0's map.
std::vector<std::vector<float>> headMeanLayers(const Trace& trace, const AttentionSelection& sel, int lastLayer,
                                               const AttentionMap*& first) {
  std::vector<std::vector<float>> layers;
  for (int l = 0; l <= lastLayer; ++l) {
    AttentionSelection s = sel;
    s.layer = l;
    const AttentionMap& m = requireMap(trace, s);
    if (m.memory_keys > 0 || m.queries.side != m.keys.side || m.queries.begin != m.keys.begin ||
        m.queries.count != m.keys.count || (first && m.queries.count != first->queries.count))
      throw AtlasError("attention rollout and flow need square self-attention over the same tokens in every layer; '" +
                       m.array + "' has " + std::to_string(m.queries.count) + " queries and " +
                       std::to_string(m.keys.count) + " keys" +
                       (m.memory_keys > 0 ? " (" + std::to_string(m.memory_keys) + " of them memory)" : ""));
    if (!first) first = &m;
    layers.push_back(mapHeadMean(trace, m));
  }
  return layers;
}

}  // namespace

std::vector<HeatmapData> rolloutHeatmaps(const Trace& trace, const AttentionSelection& sel, int lastLayer) {
  if (sel.kind == "cross_attn")
    throw AtlasError("attention rollout needs self-attention; cross-attention mixes two "
                     "sequences (choose the encoder or decoder self-attention)");
  // One family in one segment: an XL segment's keys include memory from earlier segments, so
  // a product across segments would mix different token sets.
  const auto families = attentionFamilies(trace);
  const AttentionFamily* family = findFamily(families, sel.stack, sel.kind);
  const AttentionMap* first = nullptr;
  const std::vector<std::vector<float>> layers = headMeanLayers(trace, sel, lastLayer, first);
  if (!first) return {};
  const int n = static_cast<int>(first->queries.count);
  auto prefixes = attentionRolloutPrefixes(layers, n);
  const QString what = familyTitle(family ? *family : AttentionFamily{sel.stack, sel.kind}, sel.segment);
  const bool steps = family && family->steps;
  std::vector<HeatmapData> out;
  for (int l = 0; l <= lastLayer; ++l) {
    HeatmapData d;
    d.rows = d.cols = n;
    d.values = std::move(prefixes[static_cast<size_t>(l)]);
    setMapLabels(d, trace, *first);
    d.valueName = "rollout weight";
    d.title = steps ? QString("%1, rollout of steps 1-%2").arg(what).arg(l + 1)
                    : QString("%1, rollout of layers 0-%2").arg(what).arg(l);
    out.push_back(std::move(d));
  }
  return out;
}

HeatmapData rolloutHeatmap(const Trace& trace, const AttentionSelection& sel) {
  auto all = rolloutHeatmaps(trace, sel, sel.layer);
  if (all.empty()) throw AtlasError("attention rollout needs a layer index of 0 or more");
  return std::move(all.back());
}

HeatmapData flowHeatmap(const Trace& trace, const AttentionSelection& sel) {
  if (sel.kind == "cross_attn")
    throw AtlasError("attention flow needs self-attention; cross-attention mixes two sequences");
  const AttentionMap* first = nullptr;
  const std::vector<std::vector<float>> layers = headMeanLayers(trace, sel, sel.layer, first);
  if (!first) throw AtlasError("attention flow needs a layer index of 0 or more");
  const int n = static_cast<int>(first->queries.count);
  std::vector<Tensor> mixed;
  for (const auto& a : layers) mixed.push_back(residual_mix(a.data(), n));
  // Long inputs: one row, the token whose prediction a decoder makes (the last) or an
  // encoder's first ([CLS]); every pair would be n^2 max-flows.
  const bool full = n <= kAttentionFlowFullLimit;
  const int row = sel.stack == "decoder" ? n - 1 : 0;
  const Tensor f = attention_flow(mixed, full ? std::vector<int64_t>{} : std::vector<int64_t>{row});
  HeatmapData d;
  d.rows = d.cols = n;
  d.values.assign(f.data.begin(), f.data.end());
  if (!full) {
    d.mask.assign(d.values.size(), 0);
    for (int j = 0; j < n; ++j) d.mask[size_t(row) * n + j] = 1;
    for (float& v : d.values)
      if (!std::isfinite(v)) v = 0.0f;
  }
  setMapLabels(d, trace, *first);
  const auto families = attentionFamilies(trace);
  const AttentionFamily* family = findFamily(families, sel.stack, sel.kind);
  const QString what = familyTitle(family ? *family : AttentionFamily{sel.stack, sel.kind}, sel.segment);
  const bool steps = family && family->steps;
  d.title = steps ? QString("%1, attention flow through steps 1-%2").arg(what).arg(sel.layer + 1)
                  : QString("%1, attention flow through layers 0-%2").arg(what).arg(sel.layer);
  if (!full) d.title += QString(" (row %1 only: %2 tokens)").arg(row).arg(n);
  d.valueName = "max-flow";
  return d;
}

HeatmapData valueWeightedHeatmap(const Trace& trace, const AttentionSelection& sel) {
  if (sel.head < 0) throw AtlasError("value-weighted attention is per head: choose a head number");
  HeatmapData d = attentionHeatmap(trace, sel);
  const std::vector<float> norms = value_norms(trace, requireMap(trace, sel), sel.head);
  for (int i = 0; i < d.rows; ++i)
    for (int j = 0; j < d.cols; ++j) d.values[size_t(i) * d.cols + j] *= norms[size_t(j)];
  d.title = "value-weighted " + d.title;
  d.valueName = "α |f(x)| (norm)";
  return d;
}

HeatmapData positionalHeatmap(const Trace& trace) {
  const TracedArray& p = requireTraced(trace, model_arrays::kPositional);
  if (p.tensor.shape.size() != 2)
    throw AtlasError("array 'positional' has shape " + shape_str(p.tensor.shape) +
                     ", expected [L, d]");
  HeatmapData d;
  d.rows = static_cast<int>(p.tensor.dim(0));
  d.cols = static_cast<int>(p.tensor.dim(1));
  d.values.assign(p.tensor.data.begin(), p.tensor.data.end());
  for (int i = 0; i < d.rows; ++i) d.rowLabels << QString::number(i);
  for (int j = 0; j < d.cols; ++j) d.colLabels << QString::number(j);
  // Positions that rotate queries and keys trace their angles, with the frequencies beside,
  // instead of an added encoding (core/model/qk_positions.h).
  const bool rotation = trace.find(model_arrays::kPositionalFrequencies) != nullptr;
  d.title = rotation ? "rotation table: cos(p wᵢ) | sin(p wᵢ)" : "positional encoding P";
  d.valueName = "value";
  d.rowAxis = "position";
  d.colAxis = rotation ? "frequency i (cos, then sin)" : "dimension";
  return d;
}

HeatmapData positionalSimilarity(const Trace& trace) {
  HeatmapData p = positionalHeatmap(trace);
  HeatmapData d;
  d.rows = d.cols = p.rows;
  const ConstMatMap pm(p.values.data(), p.rows, p.cols);  // [L, d]
  const Mat s = pm * pm.transpose();                      // [L, L]
  d.values.assign(s.data(), s.data() + s.size());
  d.rowLabels = d.colLabels = p.rowLabels;
  // For a rotation table, P P^T [m, n] = sum_i cos((m - n) w_i): how a query-key pair's score
  // turns with their distance alone.
  d.title = trace.find(model_arrays::kPositionalFrequencies)
                ? "distance kernel \u03A3\u1D62 cos((m \u2212 n) w\u1D62)"
                : "positional similarity P P\u1D40";
  d.valueName = "dot product";
  d.rowAxis = "position";
  d.colAxis = "position";
  return d;
}

// ---------------------------------------------------------------------------------------------

ValueMapper::ValueMapper(const HeatmapData& data, const ColorMapping& mapping)
    : m_data(&data), m_mapping(mapping), m_signed(mapping.centreZero) {
  m_rowMax.assign(static_cast<size_t>(data.rows), 0.0f);
  for (int r = 0; r < data.rows; ++r) {
    float mx = 0.0f;
    for (int c = 0; c < data.cols; ++c) {
      if (data.masked(r, c)) continue;
      const float v = data.at(r, c);
      if (!std::isfinite(v)) continue;
      if (v < 0.0f) m_signed = true;
      mx = std::max(mx, std::fabs(v));
    }
    m_rowMax[r] = mx;
    m_globalMax = std::max(m_globalMax, mx);
  }
  if (data.valueMax > 0.0f) m_globalMax = data.valueMax;
  if (mapping.fixedMax > 0.0f) m_globalMax = mapping.fixedMax;
}

float ValueMapper::map(float v, int row) const {
  const float s = scaleOf(row);
  if (!(s > 0.0f) || !std::isfinite(v)) return m_signed ? 0.5f : 0.0f;
  const float x = v / s;
  if (m_mapping.scale == ColorScale::Linear) return m_signed ? 0.5f + 0.5f * x : x;
  const float f = m_mapping.logFloor;
  const float lf = std::log10(f);
  const float a = std::fabs(x);
  const float g = a <= f ? 0.0f : (std::log10(a) - lf) / -lf;
  if (!m_signed) return g;
  return 0.5f + 0.5f * (x < 0 ? -g : g);
}

float ValueMapper::operator()(int r, int c) const { return map(m_data->at(r, c), r); }

// The tick step for a bar from 0 to `top`: 1, 2, 2.5 or 5 times a power of ten, about `count`
// steps, so the labels read 0, 0.1, 0.2 rather than 0, 0.0905, 0.181.
static double niceStep(double top, int count) {
  const double raw = top / count;
  const double decade = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * decade >= raw * 0.999) return m * decade;
  return 10.0 * decade;
}

std::vector<ValueMapper::Tick> ValueMapper::colorBarTicks() const {
  if (m_data->categories > 0) {  // one tick per id at the centre of its block
    const int n = m_data->categories;
    std::vector<Tick> ids;
    for (int id = 0; id < n; ++id) ids.push_back({float(id), (id + 0.5f) / n, QString::number(id)});
    return ids;
  }
  const bool rowNorm = m_mapping.normalization == Normalization::Row;
  const float s = rowNorm ? 1.0f : m_globalMax;
  std::vector<float> fractions;  // of s, non-negative
  if (m_mapping.scale == ColorScale::Linear) {
    if (s > 0.0f && std::isfinite(s)) {  // round values up to the bar's top
      const double step = niceStep(s, m_signed ? 2 : 4);
      for (int k = 0; k * step <= s * (1.0 + 1e-6); ++k) fractions.push_back(float(k * step / s));
    } else {
      fractions = {0.0f};
    }
  } else {
    // Decades: powers of ten between floor * s and s.
    const double lo = std::log10(double(m_mapping.logFloor) * s), hi = std::log10(double(s));
    for (double e = std::ceil(lo - 1e-9); e <= hi + 1e-9; e += 1.0) fractions.push_back(float(std::pow(10.0, e) / s));
    if (fractions.empty()) fractions.push_back(1.0f);
    if (m_signed) fractions.insert(fractions.begin(), 0.0f);
  }
  std::vector<Tick> ticks;
  auto add = [&](float fr) {
    const float value = fr * s;
    float pos;
    if (m_mapping.scale == ColorScale::Linear) {
      pos = m_signed ? 0.5f + 0.5f * fr : fr;
    } else {
      const float lf = std::log10(m_mapping.logFloor);
      const float a = std::fabs(fr);
      const float g = a <= m_mapping.logFloor ? 0.0f : (std::log10(a) - lf) / -lf;
      pos = m_signed ? 0.5f + 0.5f * (fr < 0 ? -g : g) : g;
      if (!m_signed && fr == m_mapping.logFloor) pos = 0.0f;
    }
    // Nice values print exactly; 'g' with 6 digits drops the float's representation noise.
    ticks.push_back({value, pos, QString::number(static_cast<double>(value), 'g', 4)});
  };
  for (float fr : fractions) {
    if (m_signed && fr > 0.0f) add(-fr);
    add(fr);
  }
  std::sort(ticks.begin(), ticks.end(), [](const Tick& a, const Tick& b) { return a.position < b.position; });
  if (m_signed && m_mapping.scale == ColorScale::Log) {
    // "0" at the centre of a signed log bar stands for |x| < floor.
    for (auto& t : ticks)
      if (t.value == 0.0f) t.text = "0";
  }
  return ticks;
}

QString ValueMapper::colorBarTitle() const {
  if (m_data->categories > 0) return m_data->valueName;
  QString t = m_mapping.normalization == Normalization::Row ? "fraction of row max" : m_data->valueName;
  if (m_mapping.scale == ColorScale::Log) t += " (log)";
  return t;
}

}  // namespace atlas::ui
