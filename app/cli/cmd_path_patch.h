#pragma once
// atlas patch --site path (app/cli/cmd_patch.cpp reads the shared flags): path patching's grid
// printed and written (cmd_path_patch.cpp).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "app/cli/args.h"
#include "core/analysis/path_patching.h"

namespace atlas::cli {

// Runs path patching; prints the strongest cells; with --out writes grid.npy (normalised),
// raw.npy, runs.npy (clean, corrupted) and grid.csv there, with --figure the grid's figure
// (ui/tools/patching_figure.h). Returns the exit code.
int print_path_patching(const Model& model, const std::vector<TokenInfo>& clean,
                        const std::vector<TokenInfo>& corrupted, const PathPatchSpec& spec,
                        const RunOptions& options, int64_t top, const Args& args);

}  // namespace atlas::cli
