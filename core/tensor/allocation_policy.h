#pragma once
// How the process's allocator treats the large buffers every run allocates and frees (traced
// maps, logits, activations: tens to hundreds of MB each, the same sizes run after run). By
// default glibc serves blocks over 32 MB with fresh mmap()s and returns freed heap above 128 KB
// to the kernel, so each run page-faults and zero-fills its buffers again: on this project's
// 2-core VM that was ~30 % of a keystroke on GPT-2-small at 1000 tokens (bench_incremental,
// docs/PERFORMANCE.md). Called first thing in the app, the CLI and the benches that stand for
// them: large blocks come from one heap shared by all threads and up to 1 GB of freed memory is
// kept for reuse (the price: the process's resident size shrinks only when more than that is
// free).
#include <cstdint>

namespace atlas {

void keep_freed_memory_for_reuse();

// Bytes the allocator holds free for this process (freed blocks not returned to the kernel):
// memory a new run can use although the system does not count it as available (the memory
// guard adds it, core/model/memory_budget.h). 0 where the allocator does not say (sanitizers).
uint64_t freed_memory_held();

}  // namespace atlas
