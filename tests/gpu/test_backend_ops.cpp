// Every registered backend op (core/backend/op_registry.h), every shape of its case
// (tests/backend_ops/), on every backend this machine has: the CPU backend and Vulkan (lavapipe
// when there is no GPU; never skipped), each output against the op's host reference under the
// case's tolerance rule, and supports() against what running the op does. Validation layers
// as in every Vulkan test (gpu_test_util.h Gpu). One section per op: -c <op name> runs one.
#include "core/backend/module_op.h"
#include "core/backend/op_registry.h"
#include "gpu/variant_kernel.h"
#include "tests/backend_ops/harness.h"
#include "tests/gpu/gpu_test_util.h"

using namespace atlas;
using namespace atlas::gpu_test;

TEST_CASE("every registered op matches its host reference on the CPU and Vulkan backends",
          "[gpu][backend-ops]") {
  for (const op_test::OpCase* c : op_test::op_cases()) {
    DYNAMIC_SECTION(c->op.name()) {
      Gpu g;
      op_test::check_op_on_backends(*c, {g.cpu.get(), g.vk.get()});
    }
  }
}

TEST_CASE("the Vulkan backend supports exactly the registered ops it has a kernel and a case for",
          "[gpu][backend-ops]") {
  Gpu g;
  for (const OpInfo& info : op_registry()) {
    INFO(info.name);
    // An op core computes on the host everywhere cannot be supported by a device ...
    if (!info.backend_method) CHECK_FALSE(g.vk->supports(info.op));
    // ... and one it supports is tested by the harness above.
    if (g.vk->supports(info.op)) CHECK(op_test::op_case(info.op) != nullptr);
  }
}

TEST_CASE("the Vulkan backend's variant kernels are registered module ops, each with a case",
          "[gpu][backend-ops]") {
  Gpu g;
  REQUIRE_FALSE(vk::variant_kernels().empty());  // gpu/variants/rotary has rope's
  for (const vk::VariantKernel* k : vk::variant_kernels()) {
    INFO(k->op.name);
    CHECK(find_module_op(k->op.name) == &k->op);
    CHECK(g.vk->supports_module_op(k->op));
    CHECK(op_test::op_case(k->op) != nullptr);
  }
  for (const ModuleOp* op : module_ops())
    CHECK(g.vk->supports_module_op(*op) == (vk::find_variant_kernel(op->name) != nullptr));
}
