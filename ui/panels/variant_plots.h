#pragma once
// What the variant panels draw (adaptive span, ACT, LSH, Transformer-XL, GTrXL gates), read
// from the Trace of the current run only: each panel is a list of PanelPlots built by a pure
// function of (Trace, PanelContext), so the panels never recompute the model and the tests
// can compare every plot with the trace arrays.
#include <QString>
#include <QStringList>
#include <functional>
#include <vector>

#include "ui/views/heatmap_data.h"
#include "ui/views/value_mapper.h"
#include "core/model/model.h"

namespace atlas::ui {

// What the rows / columns of a plot index, so a click can select it in the other views.
enum class PlotAxis { None, Layer, Head, Token, Step, Round, Dimension };

struct PanelPlot {
  enum class Kind { Matrix, Bars, Curves, Table, Scatter };
  QString name;  // the entry in the panel's plot list
  Kind kind = Kind::Matrix;
  // Matrix: drawn as a heatmap. Bars: rows are the categories on the x axis (rowLabels), columns
  // the bar series (colLabels). Curves: rows are the series (rowLabels), columns the x values
  // 0..cols-1. Table: text cells (cellText, [rows, cols]) over the matrix's labels; the matrix
  // holds one number per cell (drawn as the figure's heatmap). In every case the matrix is
  // what .npy writes; .csv writes the matrix, or the cell text of a Table. Scatter: one row per
  // point, columns x, y and a group index (0, 1, ...) named by groupNames; rowLabels name the
  // points (hover), and a click picks the row's token rowTokens[row] on rowAxis.
  HeatmapData matrix;
  QStringList cellText;
  ColorMapping mapping;  // Matrix only
  PlotAxis rowAxis = PlotAxis::None;
  PlotAxis colAxis = PlotAxis::None;
  QString xTitle, yTitle;  // chart axis titles (Bars, Curves, Scatter)
  QStringList groupNames;  // Scatter: the series of each group index
  std::vector<int> rowTokens;  // Scatter: the token position of each point
  // Table: sortable by any column (numbers sort as numbers); a click on a row picks the layer
  // and head of rowPicks[row], whatever the sort order.
  bool sortable = false;
  std::vector<std::pair<int, int>> rowPicks;
};

// The linked selection the panels follow (-1 = none chosen).
struct PanelContext {
  int layer = 0;
  int head = 0;    // < 0: mean over heads where a plot slices one head
  int query = -1;  // selected token (position)
  std::function<QString(int32_t)> tokenText = {};  // the model's tokenizer; empty = show ids
  int segment = -1;  // the main view's Transformer-XL segment; < 0: none chosen (every segment)
};

// One part of the linked selection a panel follows, and the values it takes in a trace.
struct PanelIndexRange {
  int count = 0;  // values 0..count-1; 0: the panel does not follow this part
  QString what;   // what holds the values, for messages: "the mask curves have 2 layers"
};
// What a panel's plots follow of the PanelContext in a trace. The CLI refuses a --layer,
// --head or --query outside these, or one the panel does not follow (the panels themselves
// clamp: the app's linked selection may come from a family with more layers than they draw).
struct PanelSelectionRanges {
  PanelIndexRange layer, head, query;
  bool meanHead = false;  // a head < 0 draws the mean over heads
};

// One variant panel: its name, whether a trace has its arrays, and its plots.
struct PanelProvider {
  QString id;     // "span", "act", "lsh", "xl", "gates"
  QString title;  // dock title
  QString arrays; // one line naming the arrays it reads (shown when they are absent)
  std::function<bool(const Trace&)> available;
  std::function<std::vector<PanelPlot>(const Trace&, const PanelContext&)> plots;
  // What the plots follow of the context in a trace; empty: nothing (every plot is the same).
  std::function<PanelSelectionRanges(const Trace&)> selection = {};
  bool needsScores = false;  // the panel reads arrays traced only with TraceOptions::scores
  bool needsQk = false;      // ... only with TraceOptions::qk (projected queries and keys)
  // Shown by itself when a run has its arrays. The tool panels (logit lens, ablation) compute
  // their arrays only while open, so they wait for the user (View > Variant panels).
  bool autoShow = true;
};

// ---- helpers shared by the providers (variant_plots.cpp) ----
// The array `name` or an AtlasError naming it.
const Tensor& requireArray(const Trace& trace, const std::string& name);
// Display labels of the run's tokens (the decoder input of an encoder-decoder model when
// `target`), or "0", "1", ... when the trace has fewer tokens than `n`.
QStringList tokenLabels(const Trace& trace, int n, bool target = false);
QStringList indexLabels(const QString& prefix, int n);
// A [layers, heads] grid of per-head values (head statistics, token search, compare): rows
// "L0".. (or "S1".. for a Universal Transformer's steps), columns "H0"...
HeatmapData layersByHeads(int64_t layers, int64_t heads, bool steps, const std::vector<double>& values,
                          const QString& title, const QString& valueName);
// A [rows, cols] matrix copied from `t` starting at flat element `offset`.
HeatmapData matrixFrom(const Tensor& t, size_t offset, int rows, int cols);
// Names of the arrays ending in `suffix`, in recording order.
std::vector<std::string> arraysEndingWith(const Trace& trace, const std::string& suffix);
// The selected head of a [heads, Lq, Lk] array, or the mean over heads when head < 0.
HeatmapData headSlice(const Tensor& t, int head);

}  // namespace atlas::ui
