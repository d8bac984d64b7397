#pragma once
// `--dump DIR`: every traced array as a NumPy .npy file plus DIR/manifest.json describing the
// tokens and the arrays. Format documented in docs/dump-format.md.
#include <functional>
#include <string>

#include "core/model/model.h"

namespace atlas {

// The folder is written as a whole (core/formats/output_folder.h): DIR may be missing, empty or
// an earlier dump, which is replaced entirely (none of its arrays survive); a failed dump leaves
// it as it was. A non-empty folder that is not a dump is refused (AtlasError naming it).
void write_dump(const std::string& dir, const Model& model, const RunResult& result);
// The same for a trace made without a model (e.g. `atlas ntm --controls`); `name` goes into
// the manifest's "model".
void write_trace_dump(const std::string& dir, const std::string& name, const Trace& trace);
// Whether write_trace_dump may write DIR: true when DIR holds an earlier dump (manifest.json
// with "format": "attention-atlas-dump" and only .npy files beside it), which it would replace;
// false when DIR is missing or empty; AtlasError naming DIR for anything else.
bool check_dump_destination(const std::string& dir);

// A dump read back: tokens, every listed array, and the attention-map catalogue. Manifests of
// version 1 (before the catalogue) get descriptions derived from the array names
// (derive_attention_maps). Throws AtlasError naming the file and the problem.
struct TraceDump {
  std::string model;
  int version = 0;
  Trace trace;
};
TraceDump read_trace_dump(const std::string& dir);
// The same from the manifest's text; `load_array(file)` reads one listed .npy file (the dump
// folder's, or anything a test or fuzz target supplies). `origin` names the manifest in errors.
TraceDump parse_trace_dump(const std::string& manifest_text, const std::string& origin,
                           const std::function<Tensor(const std::string& file)>& load_array);

}  // namespace atlas
