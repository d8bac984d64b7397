#pragma once
// An op that a variant module brings to every backend by name, without a method in Backend or
// a value in Op (DESIGN.md "a variant is a module"; ncnn finds an op's Vulkan version by name).
// The module declares it once in its own folder, with its host reference:
//   constexpr ModuleOpOf<MyArgs> kMyOp =
//       module_op<MyArgs, my_op_on_host>("my_op", "what the host computes", uses_my_op);
// and calls it with run_op(backend, kMyOp, {x, y}, args). The CPU backend runs the host
// reference; a device backend runs its kernel for the op's name when it has one
// (gpu/variants/<module>/), otherwise the host reference (inputs downloaded, outputs uploaded),
// reported once as a fallback (module_fallback_line). Every module op is listed by module_ops(),
// which the backend-ops harness checks against its cases (tests/backend_ops/) and `atlas info`
// reads to predict a backend's fallbacks for a config (expected_fallbacks, variant_ops.h).
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/config/config.h"

namespace atlas {

struct ModuleOp {
  const char* name;       // snake_case, unique among all ops; device kernels register under it
  const char* host_work;  // what runs on the host when a backend has no kernel for it
  // The host reference; `args` points to the op's argument struct (ModuleOpOf's Args).
  std::vector<Tensor> (*host)(const std::vector<Tensor>& inputs, const void* args);
  bool (*used_by)(const ModelConfig& c);  // whether a forward of `c` calls the op
};

// A ModuleOp whose callers pass its argument struct by type.
template <class Args>
struct ModuleOpOf {
  ModuleOp op;
};

template <class Args, std::vector<Tensor> (*Host)(const std::vector<Tensor>&, const Args&)>
constexpr ModuleOpOf<Args> module_op(const char* name, const char* host_work,
                                     bool (*used_by)(const ModelConfig&)) {
  return {{name, host_work,
           [](const std::vector<Tensor>& in, const void* args) {
             return Host(in, *static_cast<const Args*>(args));
           },
           used_by}};
}

template <class Args>
std::vector<DTensor> run_op(Backend& be, const ModuleOpOf<Args>& op,
                            const std::vector<DTensor>& inputs, const Args& args) {
  return be.run_module_op(op.op, inputs, &args);
}

// Every module op of this program (each module registers its own), in registration order.
const std::vector<const ModuleOp*>& module_ops();
// A module file's `const RegisterModuleOp r(kMyOp.op);` (tests/core/test_op_registry.cpp checks
// that every name is unique among built-in and module ops).
struct RegisterModuleOp {
  explicit RegisterModuleOp(const ModuleOp& op);
};
// The module op named `name`, or nullptr.
const ModuleOp* find_module_op(const std::string& name);

// The op's host reference on `be`'s tensors: inputs downloaded in one batch, outputs uploaded
// (reporting the fallback is the caller's).
std::vector<DTensor> run_module_op_on_host(Backend& be, const ModuleOp& op,
                                           const std::vector<DTensor>& inputs, const void* args);

// The line a backend without a kernel for `op` reports (same form as host_fallback_line).
std::string module_fallback_line(const ModuleOp& op);

}  // namespace atlas
