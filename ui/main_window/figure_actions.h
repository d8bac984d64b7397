#pragma once
// The window's figures: File > Export figure (a view of the run on screen as SVG, PDF, PNG,
// .npy or CSV), Export all heads to a folder, Edit > Copy … figure (PNG and SVG on the
// clipboard), and the right-click menu of the heatmap, the model grid and the token view.
#include <QObject>
#include <QString>
#include <functional>

#include "ui/views/value_mapper.h"

class QMainWindow;
class QMenu;

namespace atlas::ui {

class HeatmapView;
class ModelView;
class TokenView;
class WindowSession;
struct FigureContent;
struct FigureSpec;

class FigureActions : public QObject {
  Q_OBJECT
 public:
  // `mapping` gives the colours on screen.
  FigureActions(QMainWindow* window, WindowSession* session, HeatmapView* heatmap, ModelView* grid,
                TokenView* tokens, std::function<ColorMapping()> mapping);

  // view: "heatmap", "model", "tokens", "positional", "similarity".
  void exportDialog(const QString& view);
  void exportAllHeadsDialog();
  void copyFigure(const QString& view);
  // The right-click menu of a main view ("heatmap", "model", "tokens"): pin or unpin the query
  // row under the cursor (the heatmap's `row`), copy, export, open Compare or Ablation sweep.
  QMenu* contextMenu(const QString& view, int row = -1);

 signals:
  void failed(const QString& message);  // a copy that could not be made

 private:
  FigureSpec specOf(const QString& view) const;
  // The figure of a view as it is on screen: the heatmap's own data (value-weighted, flow, ...),
  // the other views from the trace.
  FigureContent figureOf(const FigureSpec& spec) const;

  QMainWindow* m_window;
  WindowSession* m_session;
  HeatmapView* m_heatmap;
  std::function<ColorMapping()> m_mapping;
};

}  // namespace atlas::ui
