#include "ui/panels/panel_run_extras.h"

#include "core/analysis/logit_lens.h"
#include "core/tensor/error.h"
#include "ui/panels/performer/performer_panel.h"

namespace atlas::ui {

void addPanelRunExtras(const PanelRunExtras& extras, const Model& model, RunResult& result, const RunOptions& options) {
  if (extras.performer) addPerformerStudy(model.config(), result);
  if (extras.lens && result.is_logits) {
    try {
      add_logit_lens(model, result, 5);
    } catch (const AtlasError&) {
      if (!extras.lensOptional) throw;
    }
  } else if (extras.lens && !extras.lensOptional) {
    throw AtlasError("the logit lens needs a model with an output head");
  }
  if (extras.ablation) {
    RunOptions second = options;
    second.trace = TraceOptions::none();  // only the output of the ablated model is compared
    compare_ablation(model, result, *extras.ablation, second);
  }
}

}  // namespace atlas::ui
