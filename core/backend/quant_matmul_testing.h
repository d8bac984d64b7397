#pragma once
// Test-only hooks of the quantized product (core/backend/quant_matmul.h): run a given kernel
// instead of the one the CPU would get, to compare them on one machine.
namespace atlas::quant_matmul {

// "avx512-vnni", "avx2" or "portable"; nullptr or "" returns to the automatic choice. Throws
// std::invalid_argument for a kernel this CPU cannot run. Not thread-safe against running products.
void force_kernel_for_testing(const char* name);

// Whether force_kernel_for_testing(name) would succeed on this CPU.
bool kernel_available_for_testing(const char* name);

}  // namespace atlas::quant_matmul
