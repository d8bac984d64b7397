#include "core/model/memory_limits.h"

#include <sys/resource.h>

#include <optional>
#include <sstream>
#include <vector>

#include "core/formats/input_file.h"
#include "core/tensor/error.h"

namespace atlas {

namespace {

// A limit this large means "none" (cgroup v1 writes 2^63 rounded down to a page).
constexpr uint64_t kNoLimit = uint64_t(1) << 60;

// The text of a small /proc, /sys or cgroup file; nothing when it is absent or unreadable.
std::optional<std::string> system_file_text(const std::string& path) {
  try {
    return read_input_file(path, InputKind::SystemFile);
  } catch (const AtlasError&) {
    return std::nullopt;
  }
}

// The number a cgroup file holds: nothing for "max", an absent file or anything not a number.
std::optional<uint64_t> cgroup_number(const std::string& path) {
  const std::optional<std::string> text = system_file_text(path);
  if (!text) return std::nullopt;
  std::istringstream in(*text);
  std::string word;
  if (!(in >> word) || word.empty() || word.size() > 20) return std::nullopt;
  uint64_t v = 0;
  for (char ch : word) {
    if (ch < '0' || ch > '9') return std::nullopt;
    if (__builtin_mul_overflow(v, uint64_t(10), &v) || __builtin_add_overflow(v, uint64_t(ch - '0'), &v))
      return std::nullopt;
  }
  return v;
}

// "Key:   123 kB" of /proc/meminfo or /proc/self/status, in bytes.
std::optional<uint64_t> kib_field(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, key.size(), key) != 0) continue;
    std::istringstream fields(line.substr(key.size()));
    uint64_t kib = 0;
    if (fields >> kib) return kib * 1024;
  }
  return std::nullopt;
}

// "/a/b" -> "/a/b", "/a", "/": the cgroup and its ancestors, the root last. A path that is not
// absolute or climbs with ".." gives none (the kernel never writes one).
std::vector<std::string> cgroup_levels(const std::string& path) {
  if (path.empty() || path[0] != '/' || path.find("/..") != std::string::npos) return {};
  std::vector<std::string> levels;
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  while (p.size() > 1) {
    levels.push_back(p);
    p = p.substr(0, p.rfind('/'));
    if (p.empty()) p = "/";
  }
  levels.push_back("/");
  return levels;
}

void take_if_tighter(MemoryRoom& room, uint64_t bytes, const std::string& limit) {
  if (room.bytes == 0 || bytes < room.bytes) room = {bytes, limit};
}

// Each level of a cgroup hierarchy mounted at `mount`: its limit less what it uses.
void cgroup_rooms(MemoryRoom& room, const std::string& mount, const std::string& path,
                  const char* limit_file, const char* usage_file, const char* version) {
  for (const std::string& level : cgroup_levels(path)) {
    const std::string dir = mount + (level == "/" ? "" : level);
    const std::optional<uint64_t> limit = cgroup_number(dir + "/" + limit_file);
    if (!limit || *limit >= kNoLimit) continue;
    const uint64_t used = cgroup_number(dir + "/" + usage_file).value_or(0);
    take_if_tighter(room, *limit > used ? *limit - used : 1,
                    std::string("the memory limit of cgroup ") + level + " (" + version + " " +
                        limit_file + " " + format_bytes(*limit) + ", " + format_bytes(used) +
                        " in use)");
  }
}

}  // namespace

MemoryRoom memory_room(const SystemFiles& files) {
  MemoryRoom room;
  if (const auto meminfo = system_file_text(files.meminfo))
    if (const auto available = kib_field(*meminfo, "MemAvailable:"))
      room = {*available, "MemAvailable of " + files.meminfo};

  // /proc/self/cgroup: "ID:CONTROLLERS:PATH" per line; v2 is "0::PATH", v1 lists its
  // controllers ("4:memory:/docker/x", "7:cpu,memory:/a").
  if (const auto cgroups = system_file_text(files.proc_self + "/cgroup")) {
    std::istringstream in(*cgroups);
    std::string line;
    while (std::getline(in, line)) {
      const size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
      if (b == std::string::npos) continue;
      const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
      if (controllers.empty()) {
        cgroup_rooms(room, files.cgroup_root, path, "memory.max", "memory.current", "v2");
        continue;
      }
      std::istringstream list(controllers);
      for (std::string c; std::getline(list, c, ',');)
        if (c == "memory")
          cgroup_rooms(room, files.cgroup_root + "/memory", path, "memory.limit_in_bytes",
                       "memory.usage_in_bytes", "v1");
    }
  }

  rlimit as{};
  if (files.address_space_limit && ::getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
    const auto status = system_file_text(files.proc_self + "/status");
    const uint64_t mapped = status ? kib_field(*status, "VmSize:").value_or(0) : 0;
    const uint64_t cap = static_cast<uint64_t>(as.rlim_cur);
    take_if_tighter(room, cap > mapped ? cap - mapped : 1,
                    "the address-space limit RLIMIT_AS (ulimit -v, prlimit --as) of " +
                        format_bytes(cap) + ", " + format_bytes(mapped) + " of it already mapped");
  }
  return room;
}

}  // namespace atlas
