#pragma once
// The workspace file format (docs/workspaces.md), without Qt: the app's File > Save / Open
// workspace (ui/workspace.h) converts to and from this, and tests/fuzz/fuzz_workspace.cpp
// fuzzes the parser. Every integer is range-checked as it is read, before the window uses it
// to select a layer, head, segment or query.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace atlas {

struct WorkspaceFile {
  std::string model;           // as for --model
  std::string source, target;  // input texts (target: encoder-decoder models)
  std::string stack = "encoder", kind = "attn";  // the selected map family
  int64_t layer = 0;    // layer, or step - 1 for a step family
  int64_t head = 0;     // >= 0, or an aggregate: -1 mean, -2 max, -3 rollout, -4 sink, -5 flow
  int64_t segment = 0;  // Transformer-XL segment
  int64_t query = -1;   // selected query token, -1 = none
  std::string colormap = "viridis", scale = "linear", normalization = "global";
  bool value_weighted = false, shared_grid_scale = false;
  std::vector<std::string> open_panels;  // object names of the docks on screen
  std::string window_state, geometry;    // Qt's bytes (base64 in the file)
  // The tool panels' settings and results ("patching", "dla", "sweep", "qk", "compare", "search"), each a JSON object's text that
  // the panel itself checks when it restores it.
  std::map<std::string, std::string> tools;
  bool operator==(const WorkspaceFile&) const = default;
};

// The ranges the file's integers may take.
constexpr int64_t kWorkspaceMaxIndex = 1 << 20;   // layer, head, segment
constexpr int64_t kWorkspaceMaxQuery = 1 << 24;   // query
constexpr int64_t kWorkspaceLowestHead = -5;      // the flow aggregate
constexpr uint64_t kWorkspaceMaxBytes = 4 << 20;  // a workspace is a few KB (InputKind::Workspace caps reads at this)

std::string encode_workspace(const WorkspaceFile& w);
// Throws AtlasError "<origin>: ..." naming the problem: not JSON, another format or a newer
// version, an unknown key, a key of the wrong type, an integer out of its range, bad base64, a
// "tools" entry of an unknown tool or not an object.
WorkspaceFile parse_workspace(std::string_view json, const std::string& origin);
// Read through the input-file policy (regular files only, never blocking), at most 4 MB.
WorkspaceFile read_workspace_file(const std::string& path);

}  // namespace atlas
