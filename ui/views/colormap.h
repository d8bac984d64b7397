#pragma once
// Perceptually uniform colour maps for the heatmaps. Viridis and magma come from published
// degree-6 polynomial fits (see colormap.cpp); the diverging map is computed here in Oklab so
// its lightness changes linearly from each end to the light centre.
#include <QColor>
#include <QString>
#include <QStringList>
#include <array>

namespace atlas::ui {

enum class Colormap { Viridis, Magma, Diverging };

QStringList colormapNames();                // display names, in enum order
QString colormapKey(Colormap cmap);         // "viridis" | "magma" | "diverging"
Colormap colormapFromKey(const QString& key);  // unknown keys give Viridis

// A 256-entry lookup table (ARGB32 values, opaque); t in [0, 1] maps to entry round(t * 255).
class ColorLut {
 public:
  explicit ColorLut(Colormap cmap = Colormap::Viridis);
  Colormap colormap() const { return m_cmap; }
  QRgb rgb(float t) const {
    if (!(t > 0.0f)) return m_table[0];  // also catches NaN
    if (t >= 1.0f) return m_table[255];
    return m_table[static_cast<int>(t * 255.0f + 0.5f)];
  }
  QColor color(float t) const { return QColor::fromRgb(rgb(t)); }

 private:
  Colormap m_cmap;
  std::array<QRgb, 256> m_table{};
};

// Direct evaluation (no table), used to build the LUTs and by the tests.
QColor evaluateColormap(Colormap cmap, double t);

// A colour per id (LSH buckets, cluster ids): categories, not magnitudes, so neighbouring ids
// must look unlike. Hues step by the golden angle in Oklab (each new id lands in the largest
// gap so far) over three lightness levels; ids >= 0 only (others get grey).
QRgb categoryColor(int id);

}  // namespace atlas::ui
