#include "ui/views/positional_data.h"

#include "core/model/model_arrays.h"
#include "core/tensor/error.h"
#include "ui/views/map_matrix.h"

namespace atlas::ui {

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

}  // namespace atlas::ui
