// Command recording: ops are recorded, not run, until download()/flush(); one submission
// per download however many ops; barriers only between dependent commands; pooled buffers
// reused safely while recording; split dispatches and CPU fallbacks behave like one op.
#include <cmath>

#include "tests/gpu/gpu_test_util.h"

using namespace atlas;
using namespace atlas::gpu_test;

TEST_CASE("vulkan records a chain of dependent ops into exactly one submission",
          "[gpu][recording]") {
  Gpu g;
  const int64_t L = 37, d = 24;
  Tensor x = random_tensor({L, d}, 1), w = random_tensor({d, d}, 2), b = random_tensor({d}, 3);
  Tensor gamma = random_tensor({d}, 4, 0.5f, 1.5f), beta = random_tensor({d}, 5);
  Tensor table = random_tensor({50, d}, 6);
  std::vector<int32_t> ids(L);
  for (int64_t i = 0; i < L; ++i) ids[i] = static_cast<int32_t>((i * 7) % 50);

  const uint64_t before = g.vk->submission_count();
  auto run = [&](Backend& be) {
    DTensor h = be.embedding(be.upload(table), ids, 2.0f);
    DTensor xs = be.upload(x), ws = be.upload(w), bs = be.upload(b);
    DTensor gs = be.upload(gamma), bts = be.upload(beta);
    h = be.add(h, xs);
    for (int layer = 0; layer < 3; ++layer) {  // 3 x 8 ops, each depending on the previous
      DTensor n = be.layer_norm(h, gs, bts, 1e-5f);
      DTensor qkv = be.linear(n, ws, bs);
      AttentionArgs a;
      a.heads = 4;
      a.scale = 0.4f;
      a.mask.causal = true;
      a.want_probs = true;
      AttentionResult r = be.attention(qkv, qkv, qkv, a);
      DTensor act = be.activation(be.linear(r.out, ws, {}), Activation::GeluErf);
      h = be.add(h, be.scale(be.row_normalize(act, 1e-6f), 0.5f));
    }
    return be.download(h);
  };
  const Tensor got = run(*g.vk);
  CHECK(g.vk->submission_count() - before == 1);
  const Tensor want = run(*g.cpu);
  require_close(got.data, to_double(want.data), 1e-5, "28-op chain vs cpu backend");
}

TEST_CASE("vulkan flush submits without waiting and download submits only what is new",
          "[gpu][recording]") {
  Gpu g;
  CHECK(g.vk->submission_count() == 0);
  DTensor x = g.vk->upload(random_tensor({100}, 1));
  DTensor y = g.vk->scale(x, 3.0f);
  CHECK(g.vk->submission_count() == 0);  // recorded, not run
  g.vk->flush();
  CHECK(g.vk->submission_count() == 1);
  g.vk->flush();  // nothing new: no empty submission
  CHECK(g.vk->submission_count() == 1);
  DTensor z = g.vk->add(y, x);
  const Tensor got = g.vk->download(z);  // work after the flush + the copy: one more
  CHECK(g.vk->submission_count() == 2);
  const Tensor host = g.vk->download(x);
  for (size_t i = 0; i < got.data.size(); ++i) CHECK(got.data[i] == host.data[i] * 3.0f + host.data[i]);
  CHECK(g.vk->submission_count() == 3);
}

TEST_CASE("vulkan puts barriers only between dependent commands", "[gpu][recording]") {
  Gpu g;
  DTensor a = g.vk->upload(random_tensor({64}, 1));
  DTensor b = g.vk->upload(random_tensor({64}, 2));
  DTensor c = g.vk->upload(random_tensor({64}, 3));
  // Three uploads are three independent copies: no barrier among them.
  VulkanBackendStats s0 = vulkan_backend_stats(*g.vk);
  CHECK(s0.barriers == 0);
  DTensor a2 = g.vk->scale(a, 2.0f);  // reads a copy's output: barrier
  DTensor b2 = g.vk->scale(b, 2.0f);  // independent of a2, and b was already ordered
  DTensor c2 = g.vk->scale(c, 2.0f);
  VulkanBackendStats s1 = vulkan_backend_stats(*g.vk);
  CHECK(s1.barriers - s0.barriers == 1);
  CHECK(s1.dispatches - s0.dispatches == 3);
  DTensor ab = g.vk->add(a2, b2);  // depends on the two scales: barrier
  DTensor cc = g.vk->add(c2, c2);  // independent of ab: none
  VulkanBackendStats s2 = vulkan_backend_stats(*g.vk);
  CHECK(s2.barriers - s1.barriers == 1);
  g.vk->download(ab);
  CHECK(vulkan_backend_stats(*g.vk).submissions == 1);
}

TEST_CASE("vulkan reuses pooled buffers inside one recording without hazards",
          "[gpu][recording]") {
  // t = 1.01 t twenty times: each step frees the previous tensor, so outputs ping-pong
  // between two pooled buffers, each written right after it was read (write-after-read).
  Gpu g;
  Tensor x = random_tensor({4099}, 11);
  DTensor t = g.vk->upload(x);
  std::vector<double> want(x.data.begin(), x.data.end());
  std::vector<float> f(x.data.begin(), x.data.end());
  for (int i = 0; i < 20; ++i) {
    t = g.vk->scale(t, 1.01f);
    for (float& v : f) v *= 1.01f;
  }
  const uint64_t allocated = vulkan_backend_stats(*g.vk).buffers_allocated;
  CHECK(allocated <= 4);  // dummy + input/staging + two ping-pong buffers, not 20
  CHECK(vulkan_backend_stats(*g.vk).buffers_reused >= 18);
  require_close(g.vk->download(t).data, to_double(f), 0.0, "20 scales with pooled buffers");
  CHECK(g.vk->submission_count() == 1);
}

TEST_CASE("vulkan splits elementwise, row and matmul ops over buffer windows", "[gpu][recording]") {
  // With 4 KiB bindings a [300, 40] tensor (47 KiB) is processed in aligned windows; the
  // results must equal the CPU backend's as if it were one dispatch.
  VulkanOptions o = options();
  o.max_binding_bytes = 4096;
  Gpu g(o);
  Tensor x = random_tensor({300, 40}, 1), y = random_tensor({300, 40}, 2);
  Tensor w = random_tensor({24, 40}, 3), b = random_tensor({24}, 4);
  Tensor gamma = random_tensor({40}, 5), beta = random_tensor({40}, 6);
  Tensor table = random_tensor({20, 40}, 7);
  std::vector<int32_t> ids(300);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>((i * 13) % 20);
  auto run = [&](Backend& be) {
    DTensor dx = be.upload(x);
    std::vector<Tensor> out;
    out.push_back(be.download(be.add(dx, be.upload(y))));
    out.push_back(be.download(be.activation(dx, Activation::GeluTanh)));
    out.push_back(be.download(be.layer_norm(dx, be.upload(gamma), be.upload(beta), 1e-5f)));
    out.push_back(be.download(be.linear(dx, be.upload(w), be.upload(b))));
    out.push_back(be.download(be.embedding(be.upload(table), ids, 3.0f)));
    return out;
  };
  const auto got = run(*g.vk), want = run(*g.cpu);
  const char* names[] = {"add", "gelu tanh", "layer_norm", "linear", "embedding"};
  const double tols[] = {0.0, 1e-6, 1e-5, 2e-5, 0.0};
  for (size_t i = 0; i < got.size(); ++i)
    require_close(got[i].data, to_double(want[i].data), tols[i], std::string("windowed ") + names[i]);
  CHECK(g.vk->fallbacks().empty());
}

TEST_CASE("vulkan runs an op that exceeds the device's limits on the CPU and says so",
          "[gpu][recording]") {
  VulkanOptions o = options();
  o.max_binding_bytes = 4096;
  Gpu g(o);
  Tensor x = random_tensor({5, 64}, 1), w = random_tensor({64, 64}, 2);  // w is 16 KiB
  const Tensor got = g.vk->download(g.vk->linear(g.vk->upload(x), g.vk->upload(w), {}));
  const Tensor want = g.cpu->download(g.cpu->linear(g.cpu->upload(x), g.cpu->upload(w), {}));
  require_close(got.data, to_double(want.data), 0.0, "linear fallback");
  const auto fb = g.vk->fallbacks();
  REQUIRE(fb.size() == 1);
  CHECK_THAT(fb[0], Catch::Contains("linear") && Catch::Contains("CPU"));
  g.vk->linear(g.vk->upload(x), g.vk->upload(w), {});
  CHECK(g.vk->fallbacks().size() == 1);  // listed once
}

TEST_CASE("vulkan tensors stay valid after their backend is destroyed", "[gpu][recording]") {
  DTensor keep;
  {
    Gpu g;
    keep = g.vk->scale(g.vk->upload(random_tensor({10}, 1)), 2.0f);
  }
  // The device lives on in the tensor's storage until the handle is released.
  CHECK(keep.shape == Shape{10});
  keep = DTensor{};
}
