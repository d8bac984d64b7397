#include "ui/panels/panel_registry.h"

#include "core/tensor/error.h"

namespace atlas::ui {

// Generated (cmake/module_registry.cmake): every variant folder's <m>_panels(), concatenated.
std::vector<PanelEntry> generated_variant_panels();

std::vector<PanelProvider> variantProviders() {
  std::vector<PanelProvider> all;
  for (PanelEntry& e : generated_variant_panels())
    if (auto* p = std::get_if<PanelProvider>(&e)) all.push_back(std::move(*p));
  for (PanelProvider p : {lensProvider(), ablationProvider(), predictionsProvider(), headsProvider(), qkProvider()})
    all.push_back(std::move(p));
  return all;
}

PanelProvider providerById(const QString& id) {
  for (PanelProvider& p : variantProviders())
    if (p.id == id) return p;
  throw AtlasError("no panel has the id '" + id.toStdString() + "'");
}

std::vector<VariantExplorer> variantExplorers() {
  std::vector<VariantExplorer> all;
  for (PanelEntry& e : generated_variant_panels())
    if (auto* x = std::get_if<VariantExplorer>(&e)) all.push_back(std::move(*x));
  return all;
}

}  // namespace atlas::ui
