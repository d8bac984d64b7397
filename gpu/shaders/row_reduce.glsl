// Workgroup-wide sum for the row kernels (one workgroup of ROW_WG invocations per row).
// Every invocation must call it (it contains barriers) and every one gets the same total:
// each adds the ROW_WG partial sums in the same order, so no tree of log2(ROW_WG) barriers.
#ifndef ATLAS_ROW_REDUCE_GLSL
#define ATLAS_ROW_REDUCE_GLSL
#include "common.glsl"

shared float red_buf[ROW_WG];

float wg_sum(float v) {
  red_buf[gl_LocalInvocationID.x] = v;
  memoryBarrierShared();
  barrier();
  float total = 0.0;
  for (uint i = 0u; i < ROW_WG; ++i) total += red_buf[i];
  barrier();  // all have read red_buf before a following call overwrites it
  return total;
}
#endif
