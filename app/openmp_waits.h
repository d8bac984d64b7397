#pragma once
// OpenMP threads that wait passively (OMP_WAIT_POLICY=passive) unless the user chose otherwise.
// libgomp's default spins at the end of every parallel region for up to ~300k iterations; on a
// machine where another process holds a core (any laptop, the 2-core CI machine) the spinning
// thread takes the core from the one doing the work: a 1B Q8_0 forward at 128 tokens on 2
// threads took 2.6-3.5 s spinning and 1.55 s passive beside a busy neighbour
// (docs/PERFORMANCE.md). libgomp reads the variable when it is loaded, before main, so the
// process re-executes itself once with it set.
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace atlas::app {

inline void wait_passively_in_openmp(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") || std::getenv("ATLAS_NO_REEXEC")) return;
  // Under valgrind (callgrind counts of bench/) a re-executed process would leave the tool.
  const char* preload = std::getenv("LD_PRELOAD");
  if (preload && std::strstr(preload, "vgpreload")) return;
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return;
  self[n] = '\0';
  ::setenv("OMP_WAIT_POLICY", "passive", 1);
  ::setenv("ATLAS_NO_REEXEC", "1", 1);  // never twice, even if a wrapper drops OMP_WAIT_POLICY
  ::execv(self, argv);                  // returns only on failure: then go on as we are
  ::unsetenv("OMP_WAIT_POLICY");
}

}  // namespace atlas::app
