#include "core/tensor/allocation_policy.h"

#include <malloc.h>

namespace atlas {

void keep_freed_memory_for_reuse() {
  mallopt(M_MMAP_MAX, 0);              // large blocks from the heap, reusable once freed
  mallopt(M_TRIM_THRESHOLD, 1 << 30);  // give memory back only above 1 GB free at the top
  // One arena for every thread: a run's buffers are allocated on a worker thread (a different
  // pooled thread each run) and freed on the GUI thread, so per-thread arenas kept each run's
  // memory where the next run could not reuse it.
  mallopt(M_ARENA_MAX, 1);
}

uint64_t freed_memory_held() {
  const struct mallinfo2 info = mallinfo2();  // every arena; fordblks: free chunks, top included
  return static_cast<uint64_t>(info.fordblks);
}

}  // namespace atlas
