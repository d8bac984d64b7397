#pragma once
// The traced array `name` of a run; fails the test (naming the array) when it was not traced.
#include <catch2/catch.hpp>

#include <string>

#include "core/model/model.h"

namespace atlas::test {

inline const Tensor& traced(const RunResult& r, const std::string& name) {
  const TracedArray* a = r.trace.find(name);
  INFO(name);
  REQUIRE(a != nullptr);
  return a->tensor;
}

}  // namespace atlas::test
