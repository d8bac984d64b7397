#pragma once
// What `atlas patch` and `atlas attribute` share: the patching spec's flags (--site, --direction,
// --metric, --tokens, --position), the two inputs, the grid's cell labels and its CSV.
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "app/cli/args.h"
#include "core/analysis/patching.h"
#include "core/tensor/tensor.h"
#if defined(ATLAS_HAVE_UI)
#include "ui/panels/variant_plots.h"
#endif

namespace atlas::cli {

// The flags both verbs take (add them to the verb's own in its Args spec).
inline const std::set<std::string> kPatchSpecFlags = {"--clean", "--corrupted", "--site", "--direction",
                                                      "--metric", "--tokens",  "--position"};

// Before the model loads: the required flags, the site, direction and metric, and the --tokens
// list checked against what the metric needs. `verb` names the command in messages. With
// `path_site`, --site path (path patching, which has no PatchSite) is accepted and leaves the
// spec's site as it is.
PatchSpec parse_patch_spec(const Args& a, const std::string& verb, std::vector<std::string>& tokens,
                           bool path_site = false);

struct PatchInputs {
  std::vector<TokenInfo> clean, corrupted;
  // An encoder-decoder model's decoder inputs (BOS first); empty for other models.
  std::vector<TokenInfo> clean_target, corrupted_target;
  PatchingInput clean_input() const { return {clean, clean_target}; }
  PatchingInput corrupted_input() const { return {corrupted, corrupted_target}; }
};
// After it loads: the tokens' ids and --position into `spec`, the two texts tokenized, then
// check_patching (unless `check` is false: path patching checks its own spec). With `targets`
// (atlas patch), --target and --corrupted-target (default --target) are an encoder-decoder
// model's decoder inputs and --position a target position; without, an encoder-decoder model
// is refused by check_patching's one-input form.
PatchInputs patch_inputs(const Model& model, const Args& a, const std::vector<std::string>& tokens, PatchSpec& spec,
                         bool check = true, bool targets = false);

// Sites whose grid is layer x head (every position patched at once): head, q, k, v, pattern.
bool patch_site_per_head(PatchSite s);

// "L3H2 pos 5", "L3H2" or "L3 pos 5" for a cell of the grid; with `named_rows` (an
// encoder-decoder model's grid, whose rows are sub-layers) the row's name in place of "L3 ".
std::string patch_cell_label(const PatchResult& r, int64_t cell, bool named_rows = false);
Tensor patch_values_f32(const std::vector<int64_t>& shape, const std::vector<double>& v);
// layer,row[,head][,position],metric,normalised rows: layer is the row's index, row its name
// (PatchResult::row_names); an empty metric or normalised value when NaN.
void write_patch_csv(const std::string& path, const PatchResult& r);

// What atlas patch prints and writes for any grid (activation or path patching): the note when
// clean = corrupted, the `top` cells farthest from `unpatched` (labelled by `label`), and with
// `out` the folder of grid.npy (normalised), raw.npy, runs.npy ([clean, corrupted], float32) and
// grid.csv (written by `write_csv`).
struct PatchGrid {
  const std::vector<int64_t>& shape;
  const std::vector<double>& raw;
  const std::vector<double>& normalised;
  double clean, corrupted, unpatched;
};
void report_patch_grid(const PatchGrid& g, int64_t top, const std::function<std::string(int64_t)>& label,
                       const std::optional<std::string>& out, const std::function<void(const std::string&)>& write_csv);

#if defined(ATLAS_HAVE_UI)
// The Activation patching panel's grid plot of `r` for --figure (ui/tools/patching_figure.h):
// columns named by the clean input's tokens; a head-pos grid drawn at --slice P, by default at
// the position of its strongest cell. Throws naming --slice out of the grid's positions.
ui::PanelPlot patch_grid_plot(const Args& a, const PatchResult& r, const std::vector<TokenInfo>& clean);
#endif

}  // namespace atlas::cli
