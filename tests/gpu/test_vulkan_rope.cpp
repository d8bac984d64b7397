// Vulkan rope (rotary position embedding, gpu/variants/rotary/rope.comp) against a naive
// double-precision rotation written here as complex multiplication (RoFormer eq. 15), at odd sizes,
// both pairings, with and without a pass-through tail. Inputs in [-1, 1], |cos|, |sin| <= 1: each
// output is a two-term sum, |err| <= 4 u. Against the host reference (what the CPU backend
// runs) on every backend: the rope case of the backend-ops harness (test_backend_ops.cpp).
#include <complex>

#include "core/variants/rotary/rope.h"
#include "tests/gpu/gpu_test_util.h"

using namespace atlas;
using namespace atlas::gpu_test;

namespace {

std::vector<double> naive_rope(const Tensor& x, const Tensor& table, int heads, int64_t r, bool adjacent) {
  const int64_t L = x.shape[0], width = x.shape[1], dh = width / heads;
  std::vector<double> y(x.data.begin(), x.data.end());
  for (int64_t l = 0; l < L; ++l)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < r / 2; ++i) {
        const int64_t a = l * width + h * dh + (adjacent ? 2 * i : i);
        const int64_t b = l * width + h * dh + (adjacent ? 2 * i + 1 : i + r / 2);
        const std::complex<double> turn(table.data[size_t(l * r + i)], table.data[size_t(l * r + r / 2 + i)]);
        const std::complex<double> z = std::complex<double>(x.data[size_t(a)], x.data[size_t(b)]) * turn;
        y[size_t(a)] = z.real();
        y[size_t(b)] = z.imag();
      }
  return y;
}

}  // namespace

TEST_CASE("Vulkan rope matches a naive rotation", "[vulkan][rope]") {
  Gpu g;
  struct Case {
    int64_t L;
    int heads;
    int64_t dh, r;
    bool adjacent;
  };
  for (const Case& k : {Case{37, 3, 10, 10, false}, Case{37, 3, 10, 6, false}, Case{5, 2, 8, 8, true},
                        Case{129, 1, 6, 4, true}, Case{1, 4, 2, 2, false}}) {
    INFO("L " << k.L << " heads " << k.heads << " dh " << k.dh << " r " << k.r << " adjacent " << k.adjacent);
    ModelConfig c;
    c.d_model = k.heads * k.dh;
    c.n_heads = k.heads;
    c.rope.rotary_dims = k.r;
    c.rope.pairing = k.adjacent ? RopePairing::Adjacent : RopePairing::Half;
    const RopeArgs args = rope_args(c);
    const Tensor table = rope_table(rope_frequencies(c, k.L), 0, k.L);
    const Tensor x = random_tensor({k.L, k.heads * k.dh}, uint32_t(k.L + k.r));
    const Tensor got =
        g.vk->download(apply_rope(*g.vk, g.vk->upload(x), g.vk->upload(table), args));
    const std::vector<double> want = naive_rope(x, table, k.heads, k.r, k.adjacent);
    require_close(got.data, want, 4 * kU, "rope vs naive");
  }
  CHECK(g.vk->fallbacks().empty());  // the kernel ran; nothing went through the host
}
