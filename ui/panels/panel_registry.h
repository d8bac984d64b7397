#pragma once
// Every panel of the window. The analysis panels (logit lens, ablation, predictions, head
// statistics, query-key embedding) are listed here; a variant's panels come from its own folder
// ui/panels/<m>/ (paired with core/variants/<m>/), which defines
// atlas::ui::variants::<m>_panels(): the generated list (cmake/module_registry.cmake) finds
// every such folder, so a new variant's panel adds no line here.
#include <QString>
#include <functional>
#include <memory>
#include <variant>
#include <vector>

#include "ui/panels/variant_plots.h"

class QWidget;

namespace atlas::ui {

// What an explorer window starts from: the run on screen (null before the first) and the
// input text.
struct ExplorerInput {
  std::shared_ptr<const Trace> trace;
  QString sourceText;
};

// A window of its own opened from the View menu (the NTM, SAGAN and SNAIL explorers): it runs
// its own small model instead of drawing the trace.
struct VariantExplorer {
  QString menuText;  // "Neural &Turing Machine explorer…"
  // Opens (or raises) the explorer as a child window of `parent`.
  std::function<void(QWidget* parent, const ExplorerInput& input)> open;
};

// What a variant's panel folder registers: docked panels over the trace, or explorers.
using PanelEntry = std::variant<PanelProvider, VariantExplorer>;

PanelProvider lensProvider();         // lens_panel.cpp
PanelProvider ablationProvider();     // ablation_panel.cpp
PanelProvider predictionsProvider();  // predictions_panel.cpp
PanelProvider headsProvider();        // heads_panel.cpp: head statistics
PanelProvider qkProvider();           // qk_panel.cpp: query-key embedding (joint PCA)

// Every docked panel: the variant folders' (in folder-name order), then the analysis panels.
std::vector<PanelProvider> variantProviders();
// The panel with this id (variantProviders), or an AtlasError naming it.
PanelProvider providerById(const QString& id);
// Every explorer of the variant folders, in folder-name order.
std::vector<VariantExplorer> variantExplorers();

}  // namespace atlas::ui
