#pragma once
// The selection a workspace names (map, layer or step, segment, head, query), checked against
// the run its model gives once that run is on screen: a workspace written for a larger model,
// edited by hand or a model changed since, may name layer 99 of a 12-layer model. Such a
// selection is refused naming the valid range, never clamped to a neighbour the user did not
// choose (ui/main_window/window_workspace.cpp shows the message; docs/bad-input.md).
#include <QString>
#include <vector>

#include "ui/views/attention_selection.h"

namespace atlas::ui {

// Empty when `sel` and `query` (a token position, -1 = none) exist in `trace`, whose attention
// families are `families`; otherwise what does not, with the valid range, e.g. "layer 99 is out
// of range: the decoder self-attention has 2 layers (0 to 1)".
QString workspaceSelectionProblem(const AttentionSelection& sel, int query,
                                  const std::vector<AttentionFamily>& families, const Trace& trace);

}  // namespace atlas::ui
