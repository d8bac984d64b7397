// atlas pattern: the connectivity pattern of a sparse variant (issue 4) without running a
// model. It depends only on the config's "sparse" section and the length, so lengths up to
// 1M positions are answered from the set definitions (core/variants/sparse/sparse_pattern.h), as statistics,
// a downsampled density tile, or (small L) the exact CSR arrays.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "app/cli/commands.h"
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
  if (std::filesystem::is_directory(p)) p /= "config.json";
  std::ifstream in(p, std::ios::binary);
  if (!in) throw AtlasError("cannot read config " + p.string());
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_config(ss.str(), p.string());
}

TileRequest parse_tile(const std::string& s) {
  TileRequest t;
  long long v[4];
  char tail;
  if (std::sscanf(s.c_str(), "%lld,%lld,%lld,%lld%c", &v[0], &v[1], &v[2], &v[3], &tail) != 4)
    throw AtlasError("--tile must be R0,C0,ROWS,COLS (four integers), got \"" + s + "\"");
  t.r0 = v[0];
  t.c0 = v[1];
  t.rows = v[2];
  t.cols = v[3];
  return t;
}

}  // namespace

int cmd_pattern(const std::vector<std::string>& args) {
  if (wants_help(args, kPatternUsage)) return 0;
  Args a(args, {{"--preset", "--config", "--length", "--layer", "--head", "--causal", "--tile",
                 "--zoom", "--out"},
                {"--stats"}});
  if (!a.positionals().empty()) throw AtlasError("unexpected argument " + a.positionals()[0]);
  const ModelConfig c = read_config(a);
  if (!c.sparse.enabled())
    throw AtlasError("config \"" + c.name + "\" has no sparse pattern (sparse.pattern is \"none\")");
  const int64_t length = a.get_int("--length", 0, 1, kMaxLength);
  if (!a.has("--length")) throw AtlasError("missing --length");
  const int64_t layers = std::max(c.n_layers, c.decoder_layers());
  const int64_t layer = a.get_int("--layer", 0, 0, std::max<int64_t>(0, layers - 1));
  const int64_t head = a.get_int("--head", 0, 0, c.n_heads - 1);
  const std::string causal_s = a.get_or("--causal", c.architecture == Architecture::Decoder ? "yes" : "no");
  if (causal_s != "yes" && causal_s != "no")
    throw AtlasError("--causal must be yes or no, got \"" + causal_s + "\"");
  if (a.has("--stats") == a.has("--out")) throw AtlasError("pattern needs --out FILE.npy or --stats");
  PatternRows rows(c.sparse, length, layer, head, causal_s == "yes");

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
  }
  Tensor tile = pattern_tile(rows, t);
  write_npy(a.require("--out"), tile, DType::F32);
  std::printf("wrote %s [%lld, %lld] zoom %lld\n", a.require("--out").c_str(),
              static_cast<long long>(t.rows), static_cast<long long>(t.cols),
              static_cast<long long>(t.zoom));
  return 0;
}

}  // namespace atlas::cli
