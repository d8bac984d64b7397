#pragma once
// The Performer panel's study (performer_panel.cpp): FAVOR+ against exact softmax attention.
#include "core/model/model.h"

namespace atlas::ui {

// Adds performer.study.{implicit, exact, features, mean_abs, max_tv} to the result's trace
// (run on the worker while the Performer panel is open, and by `atlas export --panel performer`).
void addPerformerStudy(const ModelConfig& c, RunResult& result);

}  // namespace atlas::ui
