#include "tests/backend_ops/harness.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <exception>
#include <string>

#include "core/backend/op_registry.h"
#include "tests/backend_ops/compare.h"

namespace atlas::op_test {

void check_op_on_backends(const OpCase& c, const std::vector<Backend*>& backends) {
  const std::string op = c.op.name();
  for (size_t s = 0; s < c.shapes; ++s) {
    const OpInstance in = c.make(s);
    const std::vector<Want> want = in.reference();
    REQUIRE(want.size() == c.outputs.size());
    for (Backend* be : backends) {
      const std::string where = op + " [" + in.shape + "] on " + be->name();
      INFO(where);
      const size_t fallbacks_before = be->fallbacks().size();
      std::vector<Tensor> got;
      try {
        got = in.run(*be);
      } catch (const std::exception& e) {
        FAIL_CHECK(where << " threw: " << e.what());
        continue;
      }
      REQUIRE(got.size() == c.outputs.size());
      for (size_t o = 0; o < got.size(); ++o) {
        const std::string what = where + ": " + c.outputs[o];
        INFO(what << " shape " << shape_str(got[o].shape) << ", reference " << shape_str(want[o].shape));
        CHECK(got[o].shape == want[o].shape);
        if (got[o].shape != want[o].shape || want[o].shape == absent_shape()) continue;
        require_close(got[o].data, want[o].data, in.tolerance(o, want[o].data), what);
      }
      const std::vector<std::string> fb = be->fallbacks();
      if (c.op.supported_by(*be)) {
        INFO(where << ": supports() says the backend has the op, but it ran on the host: "
                   << (fb.size() > fallbacks_before ? fb.back() : std::string()));
        CHECK(fb.size() == fallbacks_before);
      } else {
        INFO(where << ": supports() says the backend lacks the op, so it must report the host run");
        CHECK(std::find(fb.begin(), fb.end(), c.op.fallback_line()) != fb.end());
      }
    }
  }
}

}  // namespace atlas::op_test
