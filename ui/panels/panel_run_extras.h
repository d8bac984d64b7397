#pragma once
// The arrays some panels compute after a run instead of having the forward trace them: the
// logit lens (top-5 per layer), the Performer study (FAVOR+ against exact softmax) and an
// ablated run compared with the full one. One step for the window's post-run hook (while
// those panels are open) and for `atlas export --panel`.
#include <memory>

#include "core/analysis/ablation.h"
#include "core/model/model.h"

namespace atlas::ui {

struct PanelRunExtras {
  bool lens = false;
  bool performer = false;
  std::shared_ptr<const AblationSpec> ablation;  // null: no ablated run
  // A model the lens does not support (Transformer-XL) keeps its run without the lens instead
  // of failing (the window); false: the refusal is thrown (the CLI).
  bool lensOptional = true;
  bool any() const { return lens || performer || ablation; }
};

// Adds the arrays `extras` asks for to `result`; `options` are the run's (the ablated run
// traces nothing). Throws AtlasError naming what a model cannot give.
void addPanelRunExtras(const PanelRunExtras& extras, const Model& model, RunResult& result, const RunOptions& options);

}  // namespace atlas::ui
