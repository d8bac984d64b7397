#pragma once
// `--dump DIR`: every traced array as a NumPy .npy file plus DIR/manifest.json describing the
// tokens and the arrays. Format documented in docs/dump-format.md.
#include <string>

#include "model.h"

namespace atlas {

void write_dump(const std::string& dir, const Model& model, const RunResult& result);
// The same for a trace made without a model (e.g. `atlas ntm --controls`); `name` goes into
// the manifest's "model".
void write_trace_dump(const std::string& dir, const std::string& name, const Trace& trace);

}  // namespace atlas
