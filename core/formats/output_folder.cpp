#include "core/formats/output_folder.h"

#include <atomic>
#include <cerrno>
#include <cstdio>  // renameat2, RENAME_EXCHANGE (glibc >= 2.28)
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

#include "core/tensor/error.h"

namespace atlas {

namespace fs = std::filesystem;

namespace {

std::string reason(int err) {
  if (err == ENOSPC) return "no space left on the device";
  if (err == EDQUOT) return "disk quota exceeded";
  return std::strerror(err);
}

// "out/" and "out" are the same folder in messages.
std::string shown_name(const std::string& dir) {
  std::string s = dir;
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  if (from.empty()) return;
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

bool sync_folder(const fs::path& p) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::fsync(fd) == 0;
  ::close(fd);
  return ok;
}

// Removes the staging folder unless it was moved into place.
struct RemoveUnlessKept {
  fs::path path;
  bool keep = false;
  ~RemoveUnlessKept() {
    std::error_code ec;
    if (!keep) fs::remove_all(path, ec);
  }
};

// Puts `staging` in the place of the existing folder `target`. Returns 0 and where the old
// contents now are (to be removed), or the errno with `target` as it was.
int swap_in(const fs::path& staging, const fs::path& target, const fs::path& aside,
            fs::path& old_contents) {
#ifdef RENAME_EXCHANGE
  if (::renameat2(AT_FDCWD, staging.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) == 0) {
    old_contents = staging;
    return 0;
  }
  if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP) return errno;
#endif
  // The file system cannot exchange: two renames, between which `target` is briefly absent
  // (the old folder waits at `aside`, and is put back if the second rename fails).
  if (::rename(target.c_str(), aside.c_str()) != 0) return errno;
  if (::rename(staging.c_str(), target.c_str()) != 0) {
    const int err = errno;
    ::rename(aside.c_str(), target.c_str());
    return err;
  }
  old_contents = aside;
  return 0;
}

}  // namespace

void replace_folder(const std::string& dir,
                    const std::function<void(const std::string& staging)>& fill) {
  const std::string shown = shown_name(dir);
  if (dir.empty()) throw AtlasError("no output folder given");
  std::error_code ec;
  // The real folder: a symlink to a folder keeps pointing at the (new) folder.
  fs::path target = fs::absolute(fs::path(dir), ec);
  if (!ec) target = fs::weakly_canonical(target, ec);
  if (ec) throw AtlasError(shown + ": cannot resolve the folder's path (" + ec.message() + ")");
  if (!target.has_filename()) target = target.parent_path();  // ".../out/" -> ".../out"
  const fs::path parent = target.parent_path();
  if (parent == target) throw AtlasError(shown + ": the root folder cannot be an output folder");
  fs::create_directories(parent, ec);
  if (ec) throw AtlasError(shown + ": cannot create the folder it goes in (" + ec.message() + ")");
  const fs::file_status st = fs::status(target, ec);
  const bool existed = fs::exists(st);
  if (existed && !fs::is_directory(st))
    throw AtlasError(shown + ": exists and is not a folder; nothing was changed");
  const std::string kept = existed ? shown + " is left as it was" : "nothing was written";

  static std::atomic<unsigned> counter{0};
  // Appended piece by piece: GCC 12 warns falsely (-Wstringop-overflow) on "." + std::string.
  std::string unique = ".";
  for (const std::string& part : {target.filename().string(), std::to_string(::getpid()),
                                  std::to_string(counter++)})
    unique.append(part).push_back('.');
  unique.pop_back();
  const fs::path staging = parent / (unique + ".tmp");
  const fs::path aside = parent / (unique + ".old");
  if (::mkdir(staging.c_str(), 0755) != 0)
    throw AtlasError(shown + ": cannot create a temporary folder in " + parent.string() + " (" +
                     reason(errno) + "); " + kept);
  RemoveUnlessKept cleanup{staging};
  try {
    fill(staging.string());
    if (!sync_folder(staging))
      throw AtlasError(shown + ": cannot sync the new folder to the disk (" + reason(errno) + ")");
  } catch (const AtlasError& e) {
    // The files were written under the staging name; the user knows them under `dir`.
    std::string message = e.what();
    replace_all(message, staging.string(), shown);
    throw AtlasError(message + "; " + kept);
  }

  fs::path old_contents;
  if (!existed) {
    if (::rename(staging.c_str(), target.c_str()) != 0)
      throw AtlasError(shown + ": cannot move the new folder into place (" + reason(errno) +
                       "); nothing was written");
  } else if (const int err = swap_in(staging, target, aside, old_contents)) {
    throw AtlasError(shown + ": cannot replace the folder (" + reason(err) + "); " + kept);
  }
  cleanup.keep = true;
  sync_folder(parent);  // best effort: the new folder is in place either way
  if (!old_contents.empty()) fs::remove_all(old_contents, ec);
}

FolderContents inspect_output_folder(const std::string& dir,
                                     const std::function<bool(const std::string& name)>& ours) {
  const std::string shown = shown_name(dir);
  FolderContents c;
  std::error_code ec;
  const fs::file_status st = fs::status(dir, ec);
  if (st.type() == fs::file_type::not_found) return c;
  if (ec) throw AtlasError(shown + ": cannot look at it (" + ec.message() + ")");
  if (!fs::is_directory(st)) throw AtlasError(shown + ": exists and is not a folder; nothing was changed");
  c.exists = true;
  auto accepted = [&](const std::string& name) {
    if (ours(name)) return true;
    const size_t tmp = name.find(".tmp.");  // an interrupted AtomicFileWriter's leftover
    return tmp != std::string::npos && tmp > 0 && ours(name.substr(0, tmp));
  };
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    c.empty = false;
    const std::string name = it->path().filename().string();
    if (!accepted(name)) {
      c.foreign = name;
      break;
    }
  }
  if (ec) throw AtlasError(shown + ": cannot list the folder (" + ec.message() + ")");
  return c;
}

}  // namespace atlas
