#pragma once
// The window's settings (QSettings, ~/.config/AttentionAtlas/attention-atlas.conf): geometry and
// dock layout, and the view choices (colour map, scale, normalisation, the grid's shared scale,
// the theme).
#include "ui/views/value_mapper.h"

class QMainWindow;

namespace atlas::ui {

struct ViewSettings {
  ColorMapping mapping;  // colormap, scale, normalization, sharedScale
  bool dark = false;
  bool layoutRestored = false;  // a saved dock layout was applied (else the defaults stand)
};

// Sizes `window` (1280 x 800 unless a geometry was saved), restores its layout, and returns the
// saved view choices.
ViewSettings restoreWindowSettings(QMainWindow& window);
void saveWindowSettings(const QMainWindow& window, const ViewSettings& view);

}  // namespace atlas::ui
