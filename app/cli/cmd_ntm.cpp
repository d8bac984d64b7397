// atlas ntm: the Neural Turing Machine's addressing driven by hand-given controller outputs
// (manual mode, core/variants/ntm/ntm.h). The seeded-controller model runs through `atlas run
// preset:ntm-small`; this verb is for stepping through the mechanism with chosen numbers.
#include <cstdio>

#include "app/cli/commands.h"
#include "core/formats/dump.h"
#include "core/formats/input_file.h"
#include "core/tensor/error.h"
#include "core/variants/ntm/ntm.h"

namespace atlas::cli {

namespace {

const char* kNtmUsage =
    "usage: atlas ntm --controls FILE.json [--dump DIR]\n"
    "  Runs NTM addressing (content, gated, shifted, sharpened weights), reads and erase/add\n"
    "  writes on the memory of FILE.json with the controller outputs it gives per step and\n"
    "  head, and prints the final weights per step. Format (docs/variants.md):\n"
    "    {\"memory\": [[...], ...], \"heads\": [{\"name\": \"read0\"}, {\"name\": \"write0\", \"write\": true}],\n"
    "     \"steps\": [{\"read0\": {\"key\": [...], \"beta\": 5, \"gate\": 1, \"shift\": [0, 1, 0],\n"
    "                \"gamma\": 1}, \"write0\": {..., \"erase\": [...], \"add\": [...]}}]}\n"
    "  --dump DIR   ntm.step<t>.<head>.{content,gated,shifted,sharpened}, ntm.memory, ...\n"
    "  The seeded-controller model: atlas run preset:ntm-small --text S [--dump DIR]\n";

// Controls are a few numbers per step and head: 16 MB is far beyond any hand-written file and
// keeps the JSON parse (several times the text in memory) small.
constexpr uint64_t kMaxControlsBytes = 16u << 20;

std::string read_controls(const std::string& path) {
  const uint64_t size = check_input_file(path, InputKind::Other);  // regular file, never blocks
  if (size > kMaxControlsBytes)
    throw AtlasError(path + ": is " + format_bytes(size) + ", over the " + format_bytes(kMaxControlsBytes) +
                     " limit for an NTM controls file");
  return read_input_file(path, InputKind::Other);
}

void print_row(const RowVec& w) {
  for (int64_t i = 0; i < w.size(); ++i) std::printf(" %.4f", double(w[i]));
  std::printf("\n");
}

}  // namespace

int cmd_ntm(const std::vector<std::string>& args) {
  if (wants_help(args, kNtmUsage)) return 0;
  Args a(args, {{"--controls", "--dump"}, {}});
  // A folder --dump may not write is refused before the (possibly long) run.
  if (auto dir = a.get("--dump")) check_dump_destination(*dir);
  if (!a.positionals().empty()) throw AtlasError("ntm takes no positional arguments (see atlas ntm --help)");
  const std::string path = a.require("--controls");
  const NtmRun run = ntm_run_from_json(read_controls(path), path);
  std::printf("memory: %lld slots x %lld, %zu heads, %zu steps\n", static_cast<long long>(run.memory[0].rows()),
              static_cast<long long>(run.memory[0].cols()), run.heads.size(), run.steps.size());
  for (size_t t = 0; t < run.steps.size(); ++t)
    for (size_t h = 0; h < run.heads.size(); ++h) {
      std::printf("step %zu %-8s w:", t, printable(run.heads[h].name).c_str());
      print_row(run.steps[t].addressing[h].sharpened);
    }
  if (auto dir = a.get("--dump")) {
    Trace trace;
    trace_ntm_run(run, trace);
    write_trace_dump(*dir, "ntm-manual", trace);
    std::printf("dumped %zu arrays to %s\n", trace.arrays.size(), printable(*dir).c_str());
  }
  return 0;
}

}  // namespace atlas::cli
