// atlas patch --site path: path patching (core/analysis/path_patching.h), the strongest cells on
// stdout, the grid as .npy and .csv (the same files as activation patching's).
#include "app/cli/cmd_path_patch.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <unistd.h>

#include "app/cli/patch_args.h"
#include "app/cli/tool_figure.h"
#include "core/formats/atomic_file.h"

#if defined(ATLAS_HAVE_UI)
#include "ui/tools/patching_figure.h"
#endif

namespace atlas::cli {
namespace {

// "L0H3 -> L1H2" (a grid cell) or "L0H3" (a sender into the receiver set).
std::string path_cell_label(const PathPatchResult& r, int64_t i) {
  const int64_t H = r.shape[1];
  if (r.shape.size() == 2) return "L" + std::to_string(i / H) + "H" + std::to_string(i % H);
  const int64_t per = r.shape[2] * r.shape[3], s = i / per, k = i % per;
  return "L" + std::to_string(s / H) + "H" + std::to_string(s % H) + " -> L" + std::to_string(k / r.shape[3]) + "H" +
         std::to_string(k % r.shape[3]);
}

void write_path_csv(const std::string& path, const PathPatchResult& r) {
  std::ostringstream out;
  out.precision(9);
  const bool grid = r.shape.size() == 4;
  out << "sender_layer,sender_head" << (grid ? ",receiver_layer,receiver_head" : "") << ",metric,normalised\n";
  const int64_t H = r.shape[1], per = grid ? r.shape[2] * r.shape[3] : 1;
  for (size_t i = 0; i < r.raw.size(); ++i) {
    const int64_t s = int64_t(i) / per, k = int64_t(i) % per;
    out << s / H << ',' << s % H;
    if (grid) out << ',' << k / r.shape[3] << ',' << k % r.shape[3];
    out << ',' << r.raw[i] << ',';
    if (std::isfinite(r.normalised[i])) out << r.normalised[i];
    out << '\n';
  }
  write_file_atomically(path, out.str());
}

}  // namespace

int print_path_patching(const Model& model, const std::vector<TokenInfo>& clean,
                        const std::vector<TokenInfo>& corrupted, const PathPatchSpec& spec,
                        const RunOptions& options, int64_t top, const Args& args) {
  const std::optional<std::string> out = args.get("--out");
  const bool tty = isatty(2);
  const PathPatchResult r = path_patching(model, clean, corrupted, spec, options, [tty](int64_t done, int64_t total) {
    if (tty) std::fprintf(stderr, "\rpath patching %lld / %lld", (long long)done, (long long)total);
  });
  if (tty) std::fprintf(stderr, "\n");
  std::string receivers;
  for (const HeadRef& h : spec.receivers)
    receivers += (receivers.empty() ? "" : ",") + std::to_string(h.layer) + "." + std::to_string(h.head);
  std::printf("%s path patching into the receivers' %s (%s), metric %s at position %lld: clean %.6g, corrupted %.6g\n",
              patch_direction_name(spec.patch.direction), receiver_input_name(spec.input),
              receivers.empty() ? "every head" : receivers.c_str(), patch_metric_name(spec.patch.metric),
              (long long)r.position, r.clean, r.corrupted);
  std::string shape;
  for (int64_t s : r.shape) shape += (shape.empty() ? "" : " x ") + std::to_string(s);
  std::printf("grid %s (%s), %lld runs; normalised: clean 1, corrupted 0; a sender at or after a receiver's layer "
              "has no path (the unpatched value)\n",
              shape.c_str(), r.shape.size() == 4 ? "sender layers x heads x receiver layers x heads" : "sender layers x heads",
              (long long)r.runs);
  report_patch_grid({r.shape, r.raw, r.normalised, r.clean, r.corrupted,
                     spec.patch.direction == PatchDirection::Denoise ? r.corrupted : r.clean},
                    top, [&r](int64_t i) { return path_cell_label(r, i); }, out,
                    [&r](const std::string& path) { write_path_csv(path, r); });
#if defined(ATLAS_HAVE_UI)
  write_tool_figure(args, [&] { return std::vector<ui::PanelPlot>{ui::pathPatchingPlot(r)}; }, "Path patching");
#endif
  return 0;
}

}  // namespace atlas::cli
