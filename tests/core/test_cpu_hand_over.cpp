// The CPU backend hands its largest outputs (attention maps, logits) to the trace instead of
// copying them (Backend::take_all): what it hands over equals what download copies, a tensor
// that another handle still holds is copied and stays readable, and small outputs, empty
// handles and borrowed weights come back as copies.
#include <catch2/catch.hpp>

#include "core/backend/backend.h"
#include "core/tensor/random.h"
#include "tests/core/random_tensor.h"

using namespace atlas;
using atlas::test::random_tensor;

// Whether the buffer moved or was copied is not visible here (bench_gpt2_torch shows it: the
// copies were 600 MB a forward at 1024 tokens); what is checked is that either way the values
// are right and a buffer another handle holds is never taken.
TEST_CASE("take_all returns what download copies, and leaves a tensor another handle holds readable") {
  auto be = make_cpu_backend();
  // 4 heads x 1040 x 1040 probabilities: past the 2^22 floats the backend hands over.
  const int64_t H = 4, L = 1040, dk = 8;
  const Tensor q = random_tensor({L, H * dk}, 1), k = random_tensor({L, H * dk}, 2), v = random_tensor({L, H * dk}, 3);
  AttentionArgs args;
  args.heads = H;
  args.scale = 0.35f;
  args.mask.causal = true;
  args.want_probs = true;
  AttentionResult r = be->attention(be->upload(q), be->upload(k), be->upload(v), args);
  const Tensor copied = be->download(r.probs);
  REQUIRE(copied.shape == Shape{H, L, L});
  // The map itself, row by row: a causal softmax (row i has i + 1 nonzero weights summing to 1).
  for (int64_t i : {int64_t{0}, int64_t{517}, L - 1}) {
    double sum = 0;
    for (int64_t j = 0; j < L; ++j) sum += copied.data[size_t((2 * L + i) * L + j)];
    CHECK(sum == Approx(1.0).margin(1e-5));
    if (i + 1 < L) CHECK(copied.data[size_t((2 * L + i) * L + i + 1)] == 0.0f);  // a future key
  }

  DTensor kept = r.probs;  // a second holder: its buffer must not be given away
  std::vector<Tensor> got = be->take_all({std::move(r.probs)});
  REQUIRE(got.size() == 1);
  CHECK(got[0].shape == copied.shape);
  CHECK(got[0].data == copied.data);
  CHECK(be->download(kept).data == copied.data);

  got = be->take_all({std::move(kept)});  // now the last handle: handed over
  CHECK(got[0].shape == copied.shape);
  CHECK(got[0].data == copied.data);
}

TEST_CASE("take_all copies small outputs, weights and empty handles") {
  auto be = make_cpu_backend();
  const Tensor x = random_tensor({3, 5}, 4), w = random_tensor({2, 5}, 5);
  DTensor y = be->linear(be->upload(x), be->upload_weight(w), {});
  const Tensor want = be->download(y);
  DTensor weight = be->upload_weight(w);
  std::vector<Tensor> got = be->take_all({std::move(y), std::move(weight), DTensor{}});
  REQUIRE(got.size() == 3);
  CHECK(got[0].data == want.data);
  CHECK(got[1].data == w.data);  // a borrowed weight is copied, never moved out of the model
  CHECK(got[2].data.empty());
  for (int64_t i = 0; i < 3; ++i)  // y = x w^T, against a plain loop
    for (int64_t o = 0; o < 2; ++o) {
      double s = 0;
      for (int64_t c = 0; c < 5; ++c) s += double(x.data[size_t(i * 5 + c)]) * w.data[size_t(o * 5 + c)];
      CHECK(want.data[size_t(i * 2 + o)] == Approx(s).margin(1e-5));
    }
}
