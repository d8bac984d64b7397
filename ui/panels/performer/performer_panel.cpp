// Performer FAVOR+ approximation error (seed 003): the study of `atlas performer-error`
// (core/analysis/performer_study.h), the implicit attention rownorm(phi(Q) phi(K)^T) against the
// exact softmax(Q K^T / sqrt(d)) of the same Q, K, and the mean-abs / max row-TV error against
// the number of random features m. Q and K are drawn N(0, 0.5^2) from the model's Performer
// seed with its d_head, the run's length (at most 1024) and its masking, because the trace does
// not record the layers' own q and k. Computed on the run worker while the panel is open
// (addPerformerStudy).
#include <algorithm>

#include "core/analysis/performer_study.h"
#include "core/tensor/error.h"
#include "ui/panels/panel_registry.h"
#include "ui/panels/performer/performer_panel.h"

namespace atlas::ui {

namespace {
// The study's arrays, written by addPerformerStudy and read by the panel.
constexpr const char* kImplicit = "performer.study.implicit";
constexpr const char* kExact = "performer.study.exact";
constexpr const char* kFeatures = "performer.study.features";
constexpr const char* kMeanAbs = "performer.study.mean_abs";
constexpr const char* kMaxTv = "performer.study.max_tv";
}  // namespace

void addPerformerStudy(const ModelConfig& c, RunResult& result) {
  const PerformerConfig* performer = c.performer();
  if (!performer) throw AtlasError("model \"" + c.name + "\" does not run Performer attention");
  FavorStudySpec spec;
  spec.length = std::min<int64_t>(1024, std::max<int64_t>(1, static_cast<int64_t>(result.trace.source_tokens.size())));
  spec.d = c.d_head();
  spec.features = {16, 64, 256, 1024, performer->features};
  std::sort(spec.features.begin(), spec.features.end());
  spec.features.erase(std::unique(spec.features.begin(), spec.features.end()), spec.features.end());
  spec.sd = 0.5;
  spec.seed = performer->seed;
  spec.causal = c.architecture == Architecture::Decoder;
  spec.keep_implicit = performer->features;
  const FavorStudy study = favor_error_study(spec);
  const int64_t L = spec.length;
  const int64_t n = static_cast<int64_t>(spec.features.size());
  Tensor features({n}), meanAbs(features.shape), maxTv(features.shape);
  Tensor implicitT({L, L}), exactT({L, L});
  for (int64_t i = 0; i < n; ++i) {
    features.data[size_t(i)] = static_cast<float>(spec.features[size_t(i)]);
    meanAbs.data[size_t(i)] = static_cast<float>(study.errors[size_t(i)].mean_abs);
    maxTv.data[size_t(i)] = static_cast<float>(study.errors[size_t(i)].max_tv);
  }
  for (int64_t r = 0; r < L; ++r)
    for (int64_t s = 0; s < L; ++s) {
      implicitT.data[static_cast<size_t>(r * L + s)] = study.implicit(r, s);
      exactT.data[static_cast<size_t>(r * L + s)] = study.exact(r, s);
    }
  Trace& t = result.trace;
  t.add(kImplicit, "FAVOR+ implicit attention of synthetic q, k at the model's m [L, L]", implicitT);
  t.add(kExact, "exact softmax attention of the same q, k [L, L]", exactT);
  t.add(kFeatures, "numbers of random features m [n]", features, DType::I32);
  t.add(kMeanAbs, "mean |implicit - exact| per m [n]", meanAbs);
  t.add(kMaxTv, "max row total variation per m [n]", maxTv);
}

namespace {

PanelPlot square(const Trace& trace, const Tensor& t, const QString& name) {
  PanelPlot p;
  const int L = static_cast<int>(t.shape[0]);
  p.name = name;
  p.matrix = matrixFrom(t, 0, L, L);
  p.matrix.title = name;
  p.matrix.rowLabels = indexLabels(QString(), L);
  p.matrix.colLabels = indexLabels(QString(), L);
  p.matrix.rowAxis = "query";
  p.matrix.colAxis = "key";
  (void)trace;
  return p;
}

std::vector<PanelPlot> performerPlots(const Trace& trace, const PanelContext&) {
  std::vector<PanelPlot> out;
  const TracedArray* f = trace.find(kFeatures);
  if (!f) return out;
  const Tensor& implicit = requireArray(trace, kImplicit);
  const Tensor& exact = requireArray(trace, kExact);
  const Tensor& meanAbs = requireArray(trace, kMeanAbs);
  const Tensor& maxTv = requireArray(trace, kMaxTv);
  const int n = static_cast<int>(f->tensor.shape[0]);
  PanelPlot e;
  e.name = "error vs number of random features m";
  e.kind = PanelPlot::Kind::Bars;
  e.matrix.rows = n;
  e.matrix.cols = 2;
  for (int i = 0; i < n; ++i) {
    e.matrix.values.push_back(meanAbs.data[static_cast<size_t>(i)]);
    e.matrix.values.push_back(maxTv.data[static_cast<size_t>(i)]);
    e.matrix.rowLabels << QString("m %1").arg(static_cast<int>(f->tensor.data[static_cast<size_t>(i)]));
  }
  e.matrix.colLabels = {"mean |A - B|", "max row TV"};
  e.matrix.title = "FAVOR+ vs exact softmax, synthetic q, k ~ N(0, 0.5\u00B2)";
  e.matrix.rowAxis = "features";
  e.matrix.colAxis = "error";
  e.xTitle = "random features m";
  e.yTitle = "error";
  out.push_back(std::move(e));
  out.push_back(square(trace, implicit, "implicit attention rownorm(\u03C6(Q) \u03C6(K)\u1D40), the model's m"));
  out.push_back(square(trace, exact, "exact softmax(Q K\u1D40 / \u221Ad) of the same q, k"));
  PanelPlot diff = square(trace, implicit, "implicit \u2212 exact");
  for (size_t k = 0; k < diff.matrix.values.size(); ++k) diff.matrix.values[k] -= exact.data[k];
  diff.matrix.valueName = "difference";
  diff.mapping.colormap = Colormap::Diverging;
  out.push_back(std::move(diff));
  return out;
}

}  // namespace

namespace {

PanelProvider performerProvider() {
  PanelProvider p;
  p.id = "performer";
  p.title = "Performer error";
  p.arrays = "performer.study.* (computed while this panel is open on a Performer model)";
  p.available = [](const Trace& t) { return !t.arrays.empty(); };
  p.plots = performerPlots;
  p.autoShow = false;
  return p;
}

}  // namespace

namespace variants {
std::vector<PanelEntry> performer_panels() { return {performerProvider()}; }
}  // namespace variants

}  // namespace atlas::ui
