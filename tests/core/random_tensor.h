#pragma once
// A tensor of standard-normal values from the seeded generator, for tests that need any data.
#include "core/tensor/random.h"
#include "core/tensor/tensor.h"

namespace atlas::test {

inline Tensor random_tensor(Shape shape, uint64_t seed) {
  Tensor t(std::move(shape));
  Rng rng(seed);
  for (float& v : t.data) v = static_cast<float>(rng.normal());
  return t;
}

// The same from a generator the caller goes on drawing from.
inline Tensor random_tensor(Rng& rng, Shape shape) {
  Tensor t(std::move(shape));
  for (float& v : t.data) v = static_cast<float>(rng.normal());
  return t;
}

}  // namespace atlas::test
