#pragma once
// `--dump DIR`: every traced array as a NumPy .npy file plus DIR/manifest.json describing the
// tokens and the arrays. Format documented in docs/dump-format.md.
#include <functional>
#include <string>

#include "core/model/model.h"

namespace atlas {

void write_dump(const std::string& dir, const Model& model, const RunResult& result);
// The same for a trace made without a model (e.g. `atlas ntm --controls`); `name` goes into
// the manifest's "model".
void write_trace_dump(const std::string& dir, const std::string& name, const Trace& trace);

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
