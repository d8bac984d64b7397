#pragma once
// `--dump DIR`: every traced array as a NumPy .npy file plus DIR/manifest.json describing the
// tokens and the arrays. Format documented in docs/dump-format.md.
#include <string>

#include "model.h"

namespace atlas {

void write_dump(const std::string& dir, const Model& model, const RunResult& result);

}  // namespace atlas
