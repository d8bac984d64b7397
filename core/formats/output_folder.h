#pragma once
// Output folders written as a whole (a model, a training checkpoint, a dump), so that a failed
// write never leaves a folder whose files disagree: everything goes into a fresh hidden sibling
// of the folder (same file system), which then takes the folder's place in one rename. The old
// folder is swapped out atomically (renameat2 RENAME_EXCHANGE; two renames where the file
// system cannot exchange) and removed only after the new one is in place.
// Files inside are written with AtomicFileWriter (core/formats/atomic_file.h).
#include <functional>
#include <string>

namespace atlas {

// `fill(staging)` writes the new contents into `staging` (a fresh empty folder); then the
// folder replaces `dir` (created with its parents when missing). If `fill` or the swap fails,
// the staging folder is removed, `dir` is as it was, and the AtlasError names the file under
// `dir` (not the staging path) and says that `dir` was kept. Call replaceable checks first:
// this replaces whatever `dir` holds.
void replace_folder(const std::string& dir, const std::function<void(const std::string& staging)>& fill);

// What an existing output folder holds, for the callers that must not replace a folder they
// did not write. `ours(name)` accepts a file name this app writes into such a folder; the
// leftovers of an interrupted AtomicFileWriter ("NAME.tmp.PID.N" of an accepted NAME) count
// as ours.
struct FolderContents {
  bool exists = false;   // false: `dir` does not exist
  bool empty = true;     // exists and holds nothing
  std::string foreign;   // the first entry `ours` does not accept ("" when all are ours)
};
// Throws AtlasError when `dir` exists but is not a folder, or cannot be listed.
FolderContents inspect_output_folder(const std::string& dir,
                                     const std::function<bool(const std::string& name)>& ours);

}  // namespace atlas
