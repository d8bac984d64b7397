// The views read attention from the trace's attention-map catalogue: for every preset (the
// Transformer-XL segments over memory and the Universal Transformer steps included), the heatmap
// of the first and last layer, segment and head equals the traced array at [h, i, j] read
// directly, labelled by position with the catalogue's tokens, and the model grid is built.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "core/model/attention_map.h"
#include "tests/core/preset_test_util.h"
#include "tests/ui/ui_test_support.h"
#include "ui/export/figure_export.h"
#include "ui/views/attention_heatmap.h"
#include "ui/views/attention_selection.h"
#include "ui/views/heatmap_data.h"
#include "ui/views/model_view.h"

using namespace atlas;
using namespace atlas::ui;

namespace {

// Labels repeat ("a", "b", " "): a view that looked tokens up by label would merge or misplace
// rows. 41 bytes: three segments of tiny-xl (16, 16, 9).
const std::string kText = "abababab abab abababab abab abababab abab";

// The oracle: head h, query i, key j of a map, read from the trace's arrays (the dense array, or
// a walk over row i of the CSR nonzeros).
float tracedValue(const Trace& t, const AttentionMap& m, int64_t h, int64_t i, int64_t j) {
  if (m.dense) {
    const Tensor& a = t.find(m.array)->tensor;  // [heads, Lq, Lk]
    return a.data[size_t((h * m.queries.count + i) * m.keys.count + j)];
  }
  const Tensor& indptr = t.find(m.array + ".indptr")->tensor;
  const Tensor& indices = t.find(m.array + ".indices")->tensor;
  const Tensor& values = t.find(m.array + ".values")->tensor;  // [heads, nnz]
  const TracedArray* own = t.find(m.array + ".allowed");
  const int64_t nnz = indices.numel();
  for (auto k = int64_t(indptr.data[size_t(i)]); k < int64_t(indptr.data[size_t(i + 1)]); ++k)
    if (int64_t(indices.data[size_t(k)]) == j && (!own || own->tensor.data[size_t(h * nnz + k)] != 0.0f))
      return values.data[size_t(h * nnz + k)];
  return 0.0f;
}

// The catalogue's labels as the views show them: the first memory_keys keys marked "↺ ".
QStringList shown(const std::vector<std::string>& labels, int64_t memory) {
  QStringList out;
  for (size_t j = 0; j < labels.size(); ++j)
    out << (int64_t(j) < memory ? QString::fromUtf8("\u21BA ") : QString()) + displayLabel(labels[j]);
  return out;
}

// The one map of (family, layer, segment), found by its description (not every producer names
// its array by the dump's scheme: SAGAN's is "sagan.attention").
const AttentionMap* mapOf(const Trace& t, const AttentionFamily& f, int layer, int segment) {
  const AttentionMap* found = nullptr;
  int matches = 0;
  for (const AttentionMap& m : t.attention_maps) {
    const bool same = m.round < 0 && QString::fromStdString(m.stack) == f.stack &&
                      QString::fromStdString(m.sublayer) == f.kind &&
                      m.segment == (f.segments > 0 ? segment : -1) &&
                      (f.steps ? m.step == layer + 1 : m.step < 0 && m.layer == layer);
    if (same) {
      found = &m;
      ++matches;
    }
  }
  CHECK(matches == 1);
  return found;
}

}  // namespace

TEST_CASE("every preset's attention families show the traced maps by position", "[ui][data][catalogue]") {
  uitest::ensureApp();
  bool sawSegments = false, sawSteps = false;
  for (const PresetInfo& info : list_presets()) {
    INFO("preset " << info.name);
    const ModelConfig c = preset_test::small_preset_config(info.name);
    const Model model(c, init_params(c, 5));
    const RunResult r = preset_test::run_preset_input(model, kText, RunOptions{});
    const Trace& t = r.trace;
    const std::vector<AttentionFamily> families = attentionFamilies(t);
    if (c.ntm()) {  // addressing over memory rows: no attention over tokens to show
      CHECK(families.empty());
      continue;
    }
    REQUIRE_FALSE(families.empty());
    // Every map of the catalogue is reachable from its family.
    for (const AttentionMap& m : t.attention_maps) {
      if (m.round >= 0) continue;
      INFO("map " << m.array);
      const AttentionFamily* f = findFamily(families, QString::fromStdString(m.stack), QString::fromStdString(m.sublayer));
      REQUIRE(f);
      const int layer = static_cast<int>(m.step >= 0 ? m.step - 1 : m.layer);
      CHECK(layer < f->layers);
      CHECK(m.segment < f->segments);
      CHECK(findAttentionMap(t, {f->stack, f->kind, layer, 0, static_cast<int>(std::max<int64_t>(0, m.segment))}) == &m);
    }
    for (const AttentionFamily& f : families) {
      INFO("family " << f.label().toStdString());
      REQUIRE(f.layers > 0);
      REQUIRE(f.heads > 0);
      sawSegments |= f.segments > 1;
      sawSteps |= f.steps;
      for (int segment : {0, std::max(0, f.segments - 1)})
        for (int layer : {0, f.layers - 1}) {
          INFO("layer " << layer << ", segment " << segment);
          const AttentionMap* m = mapOf(t, f, layer, segment);
          REQUIRE(m);
          INFO("array " << m->array);
          for (int head : {0, static_cast<int>(m->heads) - 1}) {
            INFO("head " << head);
            const HeatmapData d = attentionHeatmap(t, {f.stack, f.kind, layer, head, segment});
            REQUIRE_FALSE(d.empty());
            REQUIRE(d.rows == m->queries.count);
            REQUIRE(d.cols == m->keys.count);
            int mismatches = 0;
            for (int i = 0; i < d.rows; ++i)
              for (int j = 0; j < d.cols; ++j)
                if (d.at(i, j) != tracedValue(t, *m, head, i, j)) ++mismatches;
            CHECK(mismatches == 0);
            CHECK(d.rowLabels == shown(query_labels(t, *m), 0));
            CHECK(d.colLabels == shown(key_labels(t, *m), m->memory_keys));
            // What `atlas export --view heatmap` writes for this selection: the same cells.
            FigureSpec spec;
            spec.selection = {f.stack, f.kind, layer, head, segment};
            const FigureContent fig = figureContent(spec, t);
            REQUIRE(fig.data.numel() == int64_t(d.rows) * d.cols);
            int exportMismatches = 0;
            for (int i = 0; i < d.rows; ++i)
              for (int j = 0; j < d.cols; ++j)
                if (fig.data.data[size_t(i * d.cols + j)] != tracedValue(t, *m, head, i, j)) ++exportMismatches;
            CHECK(exportMismatches == 0);
          }
          if (layer == 0) {
            const ModelGridData grid = modelGridData(t, f, true, segment);
            CHECK(grid.layers() == f.layers);
            REQUIRE_FALSE(grid.thumbnails.empty());
            CHECK_FALSE(grid.at(0, 0).empty());
          }
        }
    }
  }
  CHECK(sawSegments);  // tiny-xl's three segments
  CHECK(sawSteps);     // tiny-ut-act, tiny-ut-fixed
}
