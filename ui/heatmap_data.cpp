#include "heatmap_data.h"

#include <QRegularExpression>
#include <algorithm>
#include <cmath>
#include <map>

#include "error.h"

namespace atlas::ui {

QString AttentionFamily::label() const {
  QString what = kind == "cross_attn" ? "cross-attention"
                 : kind == "self_attn" ? "self-attention"
                                       : "self-attention";
  return stack + " " + what;
}

std::vector<AttentionFamily> attentionFamilies(const Trace& trace) {
  static const QRegularExpression re(R"(^([a-z_]+)\.layer(\d+)\.(attn|self_attn|cross_attn)$)");
  std::vector<AttentionFamily> out;
  for (const auto& a : trace.arrays) {
    auto m = re.match(QString::fromStdString(a.name));
    if (!m.hasMatch() || a.tensor.shape.size() != 3) continue;
    QString stack = m.captured(1), kind = m.captured(3);
    int layer = m.captured(2).toInt();
    auto it = std::find_if(out.begin(), out.end(), [&](const AttentionFamily& f) {
      return f.stack == stack && f.kind == kind;
    });
    if (it == out.end()) {
      out.push_back({stack, kind, 0, 0});
      it = out.end() - 1;
    }
    it->layers = std::max(it->layers, layer + 1);
    it->heads = std::max(it->heads, static_cast<int>(a.tensor.shape[0]));
  }
  return out;
}

std::string attentionArrayName(const QString& stack, const QString& kind, int layer) {
  return stack.toStdString() + ".layer" + std::to_string(layer) + "." + kind.toStdString();
}

QString headName(int head) {
  switch (head) {
    case HeadMean: return "mean over heads";
    case HeadMax: return "max over heads";
    case HeadRollout: return "attention rollout";
    default: return QString("head %1").arg(head);
  }
}

QString headShortName(int head) {
  switch (head) {
    case HeadMean: return "mean";
    case HeadMax: return "max";
    case HeadRollout: return "rollout";
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
  return s;
}

namespace {

QStringList labelsFor(const std::vector<TokenInfo>& tokens, int64_t n) {
  QStringList out;
  out.reserve(static_cast<int>(n));
  // The trace should hold one token per row; if it does not (a variant that adds positions,
  // e.g. memory), fall back to position numbers rather than mislabel.
  const bool match = static_cast<int64_t>(tokens.size()) == n;
  for (int64_t i = 0; i < n; ++i)
    out << (match ? displayLabel(tokens[static_cast<size_t>(i)].label) : QString::number(i));
  return out;
}

const TracedArray& requireArray(const Trace& trace, const std::string& name) {
  const TracedArray* a = trace.find(name);
  if (!a) throw AtlasError("the trace has no array '" + name + "' (this model does not record it)");
  return *a;
}

// Rows are queries, columns keys. Decoder self-attention of an encoder-decoder model runs
// over the target tokens; a decoder-only model keeps its input in source_tokens.
void setAttentionLabels(HeatmapData& d, const Trace& trace, const QString& stack,
                        const QString& kind) {
  const auto& src = trace.source_tokens;
  const auto& tgt = trace.target_tokens;
  const bool decoderSide = stack == "decoder" && !tgt.empty();
  d.rowLabels = labelsFor(decoderSide ? tgt : src, d.rows);
  d.colLabels = labelsFor(kind == "cross_attn" ? src : (decoderSide ? tgt : src), d.cols);
  d.rowAxis = "query";
  d.colAxis = "key";
}

void copyMask(HeatmapData& d, const Trace& trace, const std::string& arrayName) {
  const TracedArray* m = trace.find(arrayName + ".mask");
  if (!m || m->tensor.numel() != static_cast<int64_t>(d.rows) * d.cols) return;
  d.mask.resize(m->tensor.data.size());
  bool any = false;
  for (size_t i = 0; i < d.mask.size(); ++i) {
    d.mask[i] = m->tensor.data[i] != 0.0f ? 1 : 0;
    any |= d.mask[i] == 0;
  }
  if (!any) d.mask.clear();  // all allowed: keep the fast path
}

std::vector<float> headMean(const TracedArray& a) {
  const int64_t H = a.tensor.dim(0), n = a.tensor.dim(1) * a.tensor.dim(2);
  std::vector<float> out(static_cast<size_t>(n), 0.0f);
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < n; ++i) out[i] += a.tensor.data[h * n + i];
  for (auto& v : out) v /= static_cast<float>(H);
  return out;
}

}  // namespace

HeatmapData attentionHeatmap(const Trace& trace, const AttentionSelection& sel) {
  if (sel.head == HeadRollout) return rolloutHeatmap(trace, sel.stack, sel.kind, sel.layer);
  const std::string name = attentionArrayName(sel.stack, sel.kind, sel.layer);
  const TracedArray& a = requireArray(trace, name);
  if (a.tensor.shape.size() != 3)
    throw AtlasError("array '" + name + "' has shape " + shape_str(a.tensor.shape) +
                     ", expected [heads, Lq, Lk]");
  const int64_t H = a.tensor.dim(0), Lq = a.tensor.dim(1), Lk = a.tensor.dim(2);
  HeatmapData d;
  d.rows = static_cast<int>(Lq);
  d.cols = static_cast<int>(Lk);
  const int64_t n = Lq * Lk;
  if (sel.head >= 0) {
    if (sel.head >= H)
      throw AtlasError("array '" + name + "' has " + std::to_string(H) + " heads; head " +
                       std::to_string(sel.head) + " does not exist");
    d.values.assign(a.tensor.data.begin() + sel.head * n, a.tensor.data.begin() + (sel.head + 1) * n);
  } else if (sel.head == HeadMean) {
    d.values = headMean(a);
  } else {
    d.values.assign(a.tensor.data.begin(), a.tensor.data.begin() + n);
    for (int64_t h = 1; h < H; ++h)
      for (int64_t i = 0; i < n; ++i) d.values[i] = std::max(d.values[i], a.tensor.data[h * n + i]);
  }
  copyMask(d, trace, name);
  setAttentionLabels(d, trace, sel.stack, sel.kind);
  d.title = QString("%1, layer %2, %3")
                .arg(AttentionFamily{sel.stack, sel.kind}.label())
                .arg(sel.layer)
                .arg(headName(sel.head));
  return d;
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
    Mat a = 0.5f * ConstMatMap(layers[l].data(), n, n);  // [n, n]
    a.diagonal().array() += 0.5f;
    const Eigen::VectorXf sums = a.rowwise().sum();
    for (int i = 0; i < n; ++i)
      if (sums(i) > 0.0f) a.row(i) /= sums(i);
    r = l == 0 ? a : Mat(a * r);
    out.emplace_back(r.data(), r.data() + r.size());
  }
  return out;
}

std::vector<float> attentionRollout(const std::vector<std::vector<float>>& layers, int n) {
  auto all = attentionRolloutPrefixes(layers, n);
  return all.empty() ? std::vector<float>{} : std::move(all.back());
}

std::vector<HeatmapData> rolloutHeatmaps(const Trace& trace, const QString& stack,
                                         const QString& kind, int lastLayer) {
  if (kind == "cross_attn")
    throw AtlasError("attention rollout needs self-attention; cross-attention mixes two "
                     "sequences (choose the encoder or decoder self-attention)");
  std::vector<std::vector<float>> layers;
  int64_t n = -1;
  for (int l = 0; l <= lastLayer; ++l) {
    const TracedArray& a = requireArray(trace, attentionArrayName(stack, kind, l));
    if (a.tensor.shape.size() != 3 || a.tensor.dim(1) != a.tensor.dim(2) ||
        (n >= 0 && a.tensor.dim(1) != n))
      throw AtlasError("attention rollout needs square self-attention arrays of equal size; '" +
                       a.name + "' has shape " + shape_str(a.tensor.shape));
    n = a.tensor.dim(1);
    layers.push_back(headMean(a));
  }
  auto prefixes = attentionRolloutPrefixes(layers, static_cast<int>(n));
  std::vector<HeatmapData> out;
  for (int l = 0; l <= lastLayer; ++l) {
    HeatmapData d;
    d.rows = d.cols = static_cast<int>(n);
    d.values = std::move(prefixes[static_cast<size_t>(l)]);
    setAttentionLabels(d, trace, stack, kind);
    d.valueName = "rollout weight";
    d.title = QString("%1, rollout of layers 0-%2").arg(AttentionFamily{stack, kind}.label()).arg(l);
    out.push_back(std::move(d));
  }
  return out;
}

HeatmapData rolloutHeatmap(const Trace& trace, const QString& stack, const QString& kind,
                           int layer) {
  auto all = rolloutHeatmaps(trace, stack, kind, layer);
  return std::move(all.back());
}

HeatmapData positionalHeatmap(const Trace& trace) {
  const TracedArray& p = requireArray(trace, "positional");
  if (p.tensor.shape.size() != 2)
    throw AtlasError("array 'positional' has shape " + shape_str(p.tensor.shape) +
                     ", expected [L, d]");
  HeatmapData d;
  d.rows = static_cast<int>(p.tensor.dim(0));
  d.cols = static_cast<int>(p.tensor.dim(1));
  d.values = p.tensor.data;
  for (int i = 0; i < d.rows; ++i) d.rowLabels << QString::number(i);
  for (int j = 0; j < d.cols; ++j) d.colLabels << QString::number(j);
  d.title = "positional encoding P";
  d.valueName = "value";
  d.rowAxis = "position";
  d.colAxis = "dimension";
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
  d.title = "positional similarity P P\u1D40";
  d.valueName = "dot product";
  d.rowAxis = "position";
  d.colAxis = "position";
  return d;
}

// ---------------------------------------------------------------------------------------------

ValueMapper::ValueMapper(const HeatmapData& data, const ColorMapping& mapping)
    : m_data(&data), m_mapping(mapping) {
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

std::vector<ValueMapper::Tick> ValueMapper::colorBarTicks() const {
  const bool rowNorm = m_mapping.normalization == Normalization::Row;
  const float s = rowNorm ? 1.0f : m_globalMax;
  std::vector<float> fractions;  // of s, non-negative
  if (m_mapping.scale == ColorScale::Linear) {
    fractions = m_signed ? std::vector<float>{0.0f, 0.5f, 1.0f}
                         : std::vector<float>{0.0f, 0.25f, 0.5f, 0.75f, 1.0f};
  } else {
    for (float x = m_mapping.logFloor; x <= 1.0001f; x *= 10.0f) fractions.push_back(x);
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
    ticks.push_back({value, pos, QString::number(static_cast<double>(value), 'g', 3)});
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
  QString t = m_mapping.normalization == Normalization::Row ? "fraction of row max" : m_data->valueName;
  if (m_mapping.scale == ColorScale::Log) t += " (log)";
  return t;
}

}  // namespace atlas::ui
