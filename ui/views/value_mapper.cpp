#include "ui/views/value_mapper.h"

#include <algorithm>
#include <cmath>

namespace atlas::ui {

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

ColorMapping signedEffectMapping() {
  ColorMapping m;
  m.colormap = Colormap::Diverging;
  m.normalization = Normalization::Global;
  m.centreZero = true;
  return m;
}

}  // namespace atlas::ui
