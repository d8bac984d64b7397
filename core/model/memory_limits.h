#pragma once
// How much memory this process may still take, and which limit says so. The tightest of:
//   - MemAvailable of /proc/meminfo (the machine);
//   - the memory limit of the process's own cgroup and of each of its ancestors, found through
//     /proc/self/cgroup: cgroup v2's memory.max less memory.current at
//     /sys/fs/cgroup/<path>, v1's memory.limit_in_bytes less memory.usage_in_bytes under the
//     memory controller's mount /sys/fs/cgroup/memory/<path>; levels whose files are not there
//     (a container that sees its own cgroup as the root) are passed over;
//   - the address-space limit RLIMIT_AS (`ulimit -v`, `prlimit --as`) less the address space
//     already mapped (VmSize of /proc/self/status).
// memory_budget.h adds ATLAS_MEMORY_BUDGET, which replaces them all, and the freed heap the
// allocator keeps. Every file is read through the input-file policy (input_file.h).
#include <cstdint>
#include <string>

namespace atlas {

struct MemoryRoom {
  uint64_t bytes = 0;  // 0: unknown (no /proc)
  std::string limit;   // what sets it, for messages: "MemAvailable of /proc/meminfo", ...
};

// Where the files are: the system's, or a fake tree in a test.
struct SystemFiles {
  std::string proc_self = "/proc/self";  // cgroup, status
  std::string meminfo = "/proc/meminfo";
  std::string cgroup_root = "/sys/fs/cgroup";
  bool address_space_limit = true;  // consult getrlimit(RLIMIT_AS)
};

MemoryRoom memory_room(const SystemFiles& files = {});

}  // namespace atlas
