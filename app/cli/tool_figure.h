#pragma once
// --figure FILE [--plot P] of the analysis verbs (dla, qk-decompose, patch, attribute): one of
// the plots the verb's GUI panel draws (ui/tools/*_figure.h), written by the same painters as
// the panel's Export button, as SVG, PDF or PNG by the file's extension.
#include <functional>
#include <string>
#include <vector>

#include "app/cli/args.h"

#if defined(ATLAS_HAVE_UI)
#include "ui/panels/variant_plots.h"
#endif

namespace atlas::cli {

// The usage lines of the two options, for the verbs' --help.
extern const char* const kToolFigureUsage;

// Refuses now, before a run is spent: a --figure that is not .svg, .pdf or .png or cannot be a
// regular file, --plot without --figure, and --figure in a build without the Qt UI.
void check_tool_figure_args(const Args& args);

#if defined(ATLAS_HAVE_UI)
// With --figure: builds the panel's plots (`plots` is called only then) and writes the one --plot
// picks (its number or a part of its name; default the first); `panel` names the panel in
// messages. Prints "wrote FILE (plot name)" on stderr.
void write_tool_figure(const Args& args, const std::function<std::vector<ui::PanelPlot>()>& plots,
                       const std::string& panel);
#endif

}  // namespace atlas::cli
