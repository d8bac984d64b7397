// The op registry (core/backend/op_registry.h) has every op once, with the names and fallback
// lines the CLI prints; every op with a backend method has exactly one test case
// (tests/backend_ops/), and the CPU backend matches every case's host reference (the same
// harness runs Vulkan too in tests/gpu/test_backend_ops.cpp).
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "core/backend/module_op.h"
#include "core/backend/op_registry.h"
#include "tests/backend_ops/harness.h"
#include "tests/core/cpu_forwarding_backend.h"

using namespace atlas;

TEST_CASE("the op registry lists every op once, in enum order, with a distinct name", "[backend-ops]") {
  const std::vector<OpInfo>& all = op_registry();
  REQUIRE(all.size() == static_cast<size_t>(Op::Count));
  std::set<std::string> names;
  for (size_t i = 0; i < all.size(); ++i) {
    CHECK(all[i].op == static_cast<Op>(i));
    CHECK(names.insert(all[i].name).second);
    CHECK(std::string(op_name(all[i].op)) == all[i].name);
  }
  CHECK_THROWS_WITH(op_info(Op::Count), Catch::Contains("not a registered op"));
}

TEST_CASE("a fallback line names the op and what the host computes", "[backend-ops]") {
  CHECK(host_fallback_line(Op::LshAttention) ==
        "lsh_attention: LSH attention (hashing, sorting, chunked attention) computed on the host "
        "(inputs downloaded, result uploaded: no device kernel)");
  CHECK(host_fallback_line(Op::RmsNorm) ==
        "rms_norm: computed on the host (inputs downloaded, result uploaded: no device kernel)");
}

TEST_CASE("every op with a backend method has exactly one test case", "[backend-ops]") {
  for (const OpInfo& info : op_registry()) {
    INFO(info.name << (info.backend_method ? "" : " (no backend method)"));
    CHECK(op_test::registrations(info.op) == (info.backend_method ? 1 : 0));
  }
}

TEST_CASE(
    "every variant module's op is registered once, under a name no other op has, with one "
    "test case",
    "[backend-ops]") {
  std::set<std::string> names;
  for (const OpInfo& info : op_registry()) names.insert(info.name);
  REQUIRE_FALSE(module_ops().empty());  // the rotary module registers "rope"
  for (const ModuleOp* op : module_ops()) {
    INFO(op->name);
    CHECK(names.insert(op->name).second);
    CHECK(find_module_op(op->name) == op);
    CHECK(op_test::registrations(*op) == 1);
  }
  CHECK(find_module_op("rope") != nullptr);
  CHECK(find_module_op("no_such_op") == nullptr);
}

TEST_CASE("a backend without a module op's kernel runs its host reference and says so",
          "[backend-ops]") {
  // The CPU backend in every op, but claiming no module op's kernel, like a new device
  // backend before its variant kernels exist.
  struct NoKernels : atlas::backend_test::CpuForwardingBackend {
    std::string name() const override { return "no kernels"; }
  };
  const op_test::OpCase* rope = op_test::op_case(*find_module_op("rope"));
  REQUIRE(rope != nullptr);
  NoKernels be;
  CHECK_FALSE(be.supports_module_op(*find_module_op("rope")));
  // The harness compares with the host reference and requires the fallback line.
  op_test::check_op_on_backends(*rope, {&be});
  REQUIRE(be.fallbacks().size() == 1);
  CHECK(be.fallbacks()[0] ==
        "rope: rotary position embedding of queries and keys computed on the host (inputs "
        "downloaded, result uploaded: no device kernel)");
}

TEST_CASE("every registered op matches its host reference on the CPU backend", "[backend-ops]") {
  for (const op_test::OpCase* c : op_test::op_cases()) {
    DYNAMIC_SECTION(c->op.name()) {
      const std::unique_ptr<Backend> cpu = make_cpu_backend();
      op_test::check_op_on_backends(*c, {cpu.get()});
    }
  }
}
