// atlas pattern: the connectivity pattern of a sparse variant without running a
// model. It depends only on the config's "sparse" section and the length, so lengths up to
// 1M positions are answered from the set definitions (core/variants/sparse/sparse_pattern.h), as statistics,
// a downsampled density tile, or (small L) the exact CSR arrays.
#include <cstdio>
#include <filesystem>

#include "app/cli/commands.h"
#include "app/cli/output_file.h"
#include "core/formats/input_file.h"
#include "core/tensor/checked_math.h"
#include "core/tensor/error.h"
#include "core/formats/npy.h"
#include "core/model/presets.h"
#include "core/variants/sparse/sparse_pattern.h"

namespace atlas::cli {
namespace {

const char* kPatternUsage =
    "usage: atlas pattern (--preset NAME | --config FILE|DIR) --length N\n"
    "                     [--layer K] [--head H] [--causal yes|no]\n"
    "                     [--tile R0,C0,ROWS,COLS] [--zoom Z] (--out FILE.npy | --stats)\n"
    "  The allowed-key pattern of head H in layer K at N positions (1..16777216), computed\n"
    "  from the config's \"sparse\" section without weights. --causal defaults to yes for a\n"
    "  decoder-only model. --out writes a float32 [ROWS, COLS] tile: pixel (y, x) is the\n"
    "  fraction of allowed cells in rows [(R0+y)Z, (R0+y+1)Z) x columns [(C0+x)Z, (C0+x+1)Z)\n"
    "  (exact for Z <= 16, else 16 evenly spaced rows per pixel). Without --tile the whole\n"
    "  matrix at zoom Z (default: the smallest giving at most 1024 x 1024 pixels).\n"
    "  --stats prints nonzeros, density, keys per query and the CSR size.\n";

constexpr int64_t kMaxLength = int64_t(1) << 24;

ModelConfig read_config(const Args& a) {
  if (a.has("--preset") == a.has("--config"))
    throw AtlasError("pattern needs exactly one of --preset NAME or --config FILE");
  if (a.has("--preset")) return preset_config(a.require("--preset"));
  std::filesystem::path p = a.require("--config");
  // The non-throwing form: a symlink loop or an over-long path is reported by the read below,
  // which names the path and the problem.
  std::error_code ec;
  if (std::filesystem::is_directory(p, ec)) p /= "config.json";
  return parse_config(read_input_file(p.string(), InputKind::ModelConfig), p.string());
}

// --tile R0,C0,ROWS,COLS: corners >= 0, sides 1..kMaxTileSide (core/variants/sparse/sparse_pattern.h).
TileRequest parse_tile(const std::string& s) {
  const std::vector<long long> v = parse_int_list("--tile", s, {"R0", "C0", "ROWS", "COLS"}, 0, INT64_MAX);
  TileRequest t;
  t.r0 = v[0];
  t.c0 = v[1];
  t.rows = v[2];
  t.cols = v[3];
  for (const auto& [side, name] : {std::pair{t.rows, "ROWS"}, std::pair{t.cols, "COLS"}})
    if (side < 1 || side > kMaxTileSide)
      throw AtlasError(std::string("--tile ") + name + " must be between 1 and " + std::to_string(kMaxTileSide) +
                       ", got " + std::to_string(side));
  return t;
}

// The tile covers rows [r0 z, (r0 + rows) z) and columns [c0 z, (c0 + cols) z) of the L x L
// pattern. pattern_tile computes those products in int64: check them here, where the numbers
// still have their flags' names, so an overflow is a message and never a wrapped (wrong) tile.
// A tile that starts past the last position is refused too: it would be all zeros.
void check_tile(const TileRequest& t, int64_t length) {
  const struct {
    const char *what, *count_name;
    int64_t first, count;
  } axes[] = {{"row", "ROWS", t.r0, t.rows}, {"column", "COLS", t.c0, t.cols}};
  for (const auto& ax : axes) {
    const std::string name = std::string("--tile ") + ax.what;
    const int64_t begin = checked_mul(ax.first, t.zoom, name, "--zoom");
    checked_mul(checked_add(ax.first, ax.count, name, ax.count_name), t.zoom, name + " end", "--zoom");
    if (begin >= length)
      throw AtlasError(name + " " + std::to_string(ax.first) + " at --zoom " + std::to_string(t.zoom) +
                       " starts at position " + std::to_string(begin) + ", past the last of the " +
                       std::to_string(length) + " positions (at this zoom the " + ax.what + "s are 0.." +
                       std::to_string((length - 1) / t.zoom) + ")");
  }
}

}  // namespace

int cmd_pattern(const std::vector<std::string>& args) {
  if (wants_help(args, kPatternUsage)) return 0;
  Args a(args, {{"--preset", "--config", "--length", "--layer", "--head", "--causal", "--tile",
                 "--zoom", "--out"},
                {"--stats"}});
  if (!a.positionals().empty()) throw AtlasError("unexpected argument " + printable(a.positionals()[0]));
  const ModelConfig c = read_config(a);
  if (!c.sparse())
    throw AtlasError("config \"" + printable(c.name) + "\" has no sparse pattern (sparse.pattern is \"none\")");
  const int64_t length = a.get_int("--length", 0, 1, kMaxLength);
  if (!a.has("--length")) throw AtlasError("missing --length");
  const int64_t layers = std::max(c.n_layers, c.decoder_layers());
  const int64_t layer = a.get_int("--layer", 0, 0, std::max<int64_t>(0, layers - 1));
  const int64_t head = a.get_int("--head", 0, 0, c.n_heads - 1);
  const std::string causal_s = a.get_or("--causal", c.architecture == Architecture::Decoder ? "yes" : "no");
  if (causal_s != "yes" && causal_s != "no")
    throw AtlasError("--causal must be yes or no, got \"" + printable(causal_s) + "\"");
  if (a.has("--stats") == a.has("--out")) throw AtlasError("pattern needs --out FILE.npy or --stats");
  if (a.has("--out")) check_output_file("--out", a.require("--out"));
  PatternRows rows(*c.sparse(), length, layer, head, causal_s == "yes");

  if (a.has("--stats")) {
    const PatternStats s = pattern_stats(rows);
    std::printf("length: %lld\n", static_cast<long long>(s.length));
    std::printf("nonzeros: %lld\n", static_cast<long long>(s.nnz));
    std::printf("density: %.6g\n", s.density);
    std::printf("keys per query: min %lld, max %lld, mean %.2f\n",
                static_cast<long long>(s.min_row), static_cast<long long>(s.max_row),
                double(s.nnz) / double(s.length));
    std::printf("csr bytes: %.0f (dense float32 would be %.0f)\n", s.csr_bytes,
                4.0 * double(length) * double(length));
    return 0;
  }
  TileRequest t;
  if (a.has("--tile")) t = parse_tile(a.require("--tile"));
  t.zoom = a.get_int("--zoom", (length + 1023) / 1024, 1, kMaxLength);
  if (!a.has("--tile")) {
    t.rows = t.cols = (length + t.zoom - 1) / t.zoom;
    if (t.rows > kMaxTileSide)
      throw AtlasError("--zoom " + std::to_string(t.zoom) + " draws the " + std::to_string(length) +
                       " positions as " + std::to_string(t.rows) + " x " + std::to_string(t.rows) +
                       " pixels, over the " + std::to_string(kMaxTileSide) + " limit; use a larger --zoom or a --tile");
  }
  check_tile(t, length);
  Tensor tile = pattern_tile(rows, t);
  write_npy(a.require("--out"), tile, DType::F32);
  std::printf("wrote %s [%lld, %lld] zoom %lld\n", printable(a.require("--out")).c_str(),
              static_cast<long long>(t.rows), static_cast<long long>(t.cols),
              static_cast<long long>(t.zoom));
  return 0;
}

}  // namespace atlas::cli
