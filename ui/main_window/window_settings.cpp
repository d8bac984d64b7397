#include "ui/main_window/window_settings.h"

#include <QMainWindow>
#include <QSettings>
#include <algorithm>

namespace atlas::ui {

ViewSettings restoreWindowSettings(QMainWindow& window) {
  QSettings s;
  window.resize(1280, 800);
  window.restoreGeometry(s.value("window/geometry").toByteArray());
  const bool restored = window.restoreState(s.value("window/state").toByteArray());
  ViewSettings v;
  v.layoutRestored = restored;
  v.mapping.colormap = static_cast<Colormap>(std::max<int>(0, colormapNames().indexOf(s.value("view/colormap").toString())));
  v.mapping.scale = s.value("view/scale", 0).toInt() == 1 ? ColorScale::Log : ColorScale::Linear;
  v.mapping.normalization = s.value("view/normalization", 0).toInt() == 1 ? Normalization::Row : Normalization::Global;
  v.mapping.sharedScale = s.value("view/shared_grid_scale", false).toBool();
  v.dark = s.value("view/dark", false).toBool();
  return v;
}

void saveWindowSettings(const QMainWindow& window, const ViewSettings& view) {
  QSettings s;
  s.setValue("window/geometry", window.saveGeometry());
  s.setValue("window/state", window.saveState());
  s.setValue("view/colormap", colormapNames().value(static_cast<int>(view.mapping.colormap)));
  s.setValue("view/scale", view.mapping.scale == ColorScale::Log ? 1 : 0);
  s.setValue("view/normalization", view.mapping.normalization == Normalization::Row ? 1 : 0);
  s.setValue("view/shared_grid_scale", view.mapping.sharedScale);
  s.setValue("view/dark", view.dark);
}

}  // namespace atlas::ui
