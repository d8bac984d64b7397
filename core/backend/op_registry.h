#pragma once
// Every backend op registered once, by id (DESIGN.md "Backend boundary"; the shape of ggml's op
// table): its name, what a device backend without a kernel does instead, and whether Backend
// has a method for it. op_name() and host_fallback_line() (backend.h) read this table. The
// backend-ops harness (tests/backend_ops/) keys each op's test case by the same id and fails
// for an op with a backend method but no case; a device backend's supports() can be checked
// against it (gpu/vk_pipelines.cpp derives Vulkan's from its kernel table).
#include <vector>

#include "core/backend/backend.h"

namespace atlas {

struct OpInfo {
  Op op;
  const char* name;       // snake_case; prefixes the op's fallback line and test messages
  const char* host_work;  // what runs on the host when a backend has no kernel for it
  // false: core computes the op on the host on every backend (no Backend method to test or
  // to implement; note_host_compute reports it).
  bool backend_method = true;
};

// One entry per Op, in enum order: op_registry()[i].op == Op(i), size == Op::Count.
const std::vector<OpInfo>& op_registry();
// Throws AtlasError for a value outside the enum.
const OpInfo& op_info(Op op);

}  // namespace atlas
