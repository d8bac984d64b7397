// Output paths of the CLI (output_file.h).
#include "app/cli/output_file.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>

#include "app/cli/args.h"
#include "core/tensor/error.h"

namespace atlas::cli {

void check_output_file(const std::string& flag, const std::string& path) {
  if (path.empty()) throw AtlasError(flag + " is empty: give a file name");
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return;  // new file (or a path problem the writer names)
  if (S_ISREG(st.st_mode)) return;
  const char* what = S_ISDIR(st.st_mode)    ? "a folder"
                     : S_ISCHR(st.st_mode)  ? "a character device"
                     : S_ISBLK(st.st_mode)  ? "a block device"
                     : S_ISFIFO(st.st_mode) ? "a named pipe (FIFO)"
                     : S_ISSOCK(st.st_mode) ? "a socket"
                                            : "not a regular file";
  throw AtlasError(flag + " " + printable(path) + " is " + what +
                   ", not a regular file; atlas writes a file by replacing it, so give a file path");
}

std::string lowercase_extension(const std::string& path) {
  const size_t dot = path.rfind('.');
  std::string e = dot == std::string::npos ? "" : path.substr(dot + 1);
  std::transform(e.begin(), e.end(), e.begin(),
                 [](unsigned char ch) { return char(std::tolower(ch)); });
  return e;
}

}  // namespace atlas::cli
