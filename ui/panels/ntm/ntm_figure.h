#pragma once
// The Neural Turing Machine figure: for one step and head, seed 004's Fig. 12 stages as four
// bar charts (content, gated, shifted, sharpened weights), then the memory before and after
// the step and every head's weights over time as heatmaps. The on-screen NtmPanel and the
// export (SVG, PDF, PNG, .npy) draw through paintNtmFigure, so exports look like the panel.
#include <QRectF>
#include <QString>

#include "core/variants/ntm/ntm.h"

class QPainter;

namespace atlas::ui {

struct NtmFigureSelection {
  int step = 0;
  int head = 0;
};

void paintNtmFigure(QPainter& p, const QRectF& rect, const NtmRun& run, NtmFigureSelection sel,
                    bool dark = false);

// Writes `path`, the format taken from the extension: .png (150 dpi), .svg, .pdf (10 x 6.5 in),
// or .npy = the four stages of the selected step and head [4, N] (content, gated, shifted,
// sharpened). Throws AtlasError naming an unknown format or an unwritable file.
void exportNtmFigure(const NtmRun& run, NtmFigureSelection sel, const QString& path);

}  // namespace atlas::ui
