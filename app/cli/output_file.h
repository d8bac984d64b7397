#pragma once
// Output paths of the CLI (--out FILE): checked before any work is done. Files are written by
// replacing them (core/formats/atomic_file.h: a temporary sibling renamed over the name), which
// over a device, FIFO or socket would replace the node itself (as root, /dev/null would become
// a regular file), so such a path is refused by name instead.
#include <string>

namespace atlas::cli {

// Throws AtlasError("--out /dev/null is a character device, not a regular file; ...") when
// `path` exists and is not a regular file (following symlinks), or is empty.
void check_output_file(const std::string& flag, const std::string& path);

// The part of `path` after its last dot, lowercased ("" without a dot): the format an --out
// file is written in.
std::string lowercase_extension(const std::string& path);

}  // namespace atlas::cli
