#version 450
// Gather from a table held in its file's encoding (dequant.glsl): y[r, :] = table[ids[r], :] *
// scale, each gathered value dequantized here, so only those rows are ever converted. One
// workgroup per row (grid-stride over rows); ids were range-checked on the host.
#include "common.glsl"
layout(local_size_x = 128) in;
layout(std430, set = 0, binding = 0) readonly buffer T { uint wq[]; };
layout(std430, set = 0, binding = 1) readonly buffer I { int ids[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform PC {
  uint row0; uint rows; uint d; uint vocab; uint y_base; uint type; uint row_bytes;
  uint block_elems; uint block_bytes; float scale;
} pc;
#include "dequant.glsl"

void main() {
  for (uint r = pc.row0 + gl_WorkGroupID.x; r < pc.row0 + pc.rows; r += gl_NumWorkGroups.x) {
    const uint id = min(uint(ids[r]), pc.vocab - 1u);  // never read out of bounds
    const uint src = id * pc.row_bytes, dst = r * pc.d - pc.y_base;
    for (uint c = gl_LocalInvocationID.x; c < pc.d; c += ELT_WG) {
      const uint blk = c / pc.block_elems;
      y[dst + c] = dequant(pc.type, src + blk * pc.block_bytes, c - blk * pc.block_elems) * pc.scale;
    }
  }
}
