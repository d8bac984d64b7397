// Workgroup-wide max and sum by a shared-memory tree for the attention kernels that give one
// workgroup of WG invocations to each (query row, head). Every invocation must call them
// (they contain barriers) and every one gets the same result.
#ifndef ATLAS_WG_TREE_REDUCE_GLSL
#define ATLAS_WG_TREE_REDUCE_GLSL

#define WG 64u

shared float red[WG];

float reduce_max(float x) {
  const uint t = gl_LocalInvocationID.x;
  red[t] = x;
  memoryBarrierShared();
  barrier();
  for (uint s = WG / 2u; s > 0u; s >>= 1u) {
    if (t < s) red[t] = max(red[t], red[t + s]);
    memoryBarrierShared();
    barrier();
  }
  const float r = red[0];
  barrier();  // red is reused by the next reduction
  return r;
}

float reduce_sum(float x) {
  const uint t = gl_LocalInvocationID.x;
  red[t] = x;
  memoryBarrierShared();
  barrier();
  for (uint s = WG / 2u; s > 0u; s >>= 1u) {
    if (t < s) red[t] += red[t + s];
    memoryBarrierShared();
    barrier();
  }
  const float r = red[0];
  barrier();
  return r;
}

#endif
