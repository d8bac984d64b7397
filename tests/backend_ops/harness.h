#pragma once
// The backend-ops harness: every shape of a registered op case (op_case.h) run on each given
// backend and every output compared with the op's host reference under the case's tolerance
// rule. Failures name the op, the shape, the backend and the output.
#include <vector>

#include "core/backend/backend.h"
#include "tests/backend_ops/op_case.h"

namespace atlas::op_test {

// Also checks each backend's supports(): a backend that supports the op must run every shape
// without a host fallback, one that does not must report one (host_fallback_line).
void check_op_on_backends(const OpCase& c, const std::vector<Backend*>& backends);

}  // namespace atlas::op_test
