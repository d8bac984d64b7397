#pragma once
// Value -> colour: the colour mapping (map, linear or log scale, global or per-row
// normalisation, a shared scale) and the ValueMapper that turns one HeatmapData's values into
// positions on the colour map, with the colour bar's ticks and title.
#include <QString>
#include <vector>

#include "ui/views/colormap.h"
#include "ui/views/heatmap_data.h"

namespace atlas::ui {

enum class ColorScale { Linear, Log };
enum class Normalization { Global, Row };

struct ColorMapping {
  Colormap colormap = Colormap::Viridis;
  ColorScale scale = ColorScale::Linear;
  Normalization normalization = Normalization::Global;
  float logFloor = 1e-3f;  // log scale spans [floor * max, max]
  // Map [-m, m] -> [0, 1] even when no value is negative, so 0 keeps the diverging map's
  // neutral centre (differences and effects whose sign matters).
  bool centreZero = false;
  // > 0: the top of the (global) scale instead of the data's largest |value| (a grid's tiles
  // drawn on one shared scale).
  float fixedMax = 0.0f;
  // Grids of maps (the layers x heads view): every tile on one scale, the largest value of any
  // tile (fixedMax), instead of each tile on its own maximum.
  bool sharedScale = false;
};

// Effects whose sign matters (a difference of two maps, a patching effect, a logit
// attribution): the diverging colours on one global scale, 0 at the neutral centre.
ColorMapping signedEffectMapping();

// Maps the values of one HeatmapData to t in [0, 1]. Non-negative data maps [0, max] -> [0, 1];
// data with negative values maps symmetrically [-m, m] -> [0, 1] (0 at the centre), which is
// what the diverging colour map is for.
class ValueMapper {
 public:
  ValueMapper(const HeatmapData& data, const ColorMapping& mapping);
  float operator()(int r, int c) const;
  float map(float v, int row) const;
  bool signedData() const { return m_signed; }
  int categories() const { return m_data->categories; }
  float globalMax() const { return m_globalMax; }  // max |v| over unmasked cells
  // Tick values for the colour bar (in data units, or fractions of the row maximum) and the
  // bar position of each tick in [0, 1].
  struct Tick {
    float value;
    float position;
    QString text;
  };
  std::vector<Tick> colorBarTicks() const;
  QString colorBarTitle() const;

 private:
  const HeatmapData* m_data;
  ColorMapping m_mapping;
  bool m_signed = false;
  float m_globalMax = 0.0f;
  std::vector<float> m_rowMax;  // max |v| per row (row normalisation)
  float scaleOf(int row) const {
    return m_mapping.normalization == Normalization::Row ? m_rowMax[row] : m_globalMax;
  }
};

}  // namespace atlas::ui
