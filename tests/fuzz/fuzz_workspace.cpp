// libFuzzer target for workspace files (core/formats/workspace_file.h parse_workspace): any
// input must either parse or throw atlas::AtlasError, and what parses must survive a round trip
// through encode_workspace unchanged. Any other exception, crash, sanitizer report or a round
// trip that changes the workspace is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/formats/workspace_file.h"
#include "core/tensor/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  atlas::WorkspaceFile w;
  try {
    w = atlas::parse_workspace(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.atlas");
  } catch (const atlas::AtlasError&) {
    return 0;
  }
  // Strings that are not UTF-8 are written with U+FFFD, so only valid ones must come back equal.
  try {
    const atlas::WorkspaceFile again = atlas::parse_workspace(atlas::encode_workspace(w), "again");
    if (again.layer != w.layer || again.head != w.head || again.segment != w.segment ||
        again.query != w.query || again.window_state != w.window_state ||
        again.geometry != w.geometry || again.open_panels.size() != w.open_panels.size() ||
        again.tools != w.tools)
      std::abort();
  } catch (const atlas::AtlasError&) {
    std::abort();  // what parsed once must parse again
  }
  return 0;
}
