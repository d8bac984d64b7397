// Shared definitions of the compute shaders. Each .comp mirrors its push-constant struct from
// gpu/push_constants.h; all members are 4-byte scalars so std430 matches the C++ layout.
#ifndef ATLAS_COMMON_GLSL
#define ATLAS_COMMON_GLSL

// Elementwise kernels use 128 invocations (the minimum every Vulkan device supports); row
// kernels 32 per row: a warp/wave-sized group reduces with two barriers, and on CPU
// drivers (lavapipe) every barrier costs a switch per 8 invocations, so fewer is faster.
#define ELT_WG 128u
#define ROW_WG 32u

// -inf is written for masked scores (as the CPU backend does). Arithmetic never touches it:
// running maxima start at NEG_BIG and masked keys are tracked by a flag, so no inf - inf.
#define NEG_INF_BITS 0xff800000u
#define NEG_BIG (-3.0e38)

#endif
