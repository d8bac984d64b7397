// Vulkan gtrxl_gate (GTrXL's input, output, highway and GRU gates, with and without the
// reordering's ReLU) against a naive double-precision loop over Parisotto et al.'s equations
// written here, and against the CPU backend's host reference, at odd sizes. Bounds (inputs in
// [-1, 1], weights in [-0.3, 0.3], d <= 37): gates and output |err| <= 2e-6.
#include <cmath>
#include <map>

#include "core/variants/gtrxl/gtrxl_gate.h"
#include "tests/gpu/gpu_test_util.h"

using namespace atlas;
using namespace atlas::gpu_test;

namespace {

struct NaiveGate {
  std::vector<double> out, gate, z;
};

double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

// (W v)_o for a [d, d] map stored [out, in], v one row of an [L, d] tensor.
double apply_row(const Tensor& w, const std::vector<double>& v, int64_t o) {
  const int64_t d = int64_t(v.size());
  double s = 0;
  for (int64_t c = 0; c < d; ++c) s += double(w.data[size_t(o * d + c)]) * v[size_t(c)];
  return s;
}

NaiveGate naive_gate(GateType type, bool relu, const Tensor& x, const Tensor& y, const std::map<std::string, Tensor>& w) {
  const int64_t L = x.shape[0], d = x.shape[1];
  NaiveGate n;
  n.out.assign(size_t(L * d), 0.0);
  n.gate.assign(size_t(L * d), 0.0);
  n.z.assign(size_t(L * d), 0.0);
  for (int64_t i = 0; i < L; ++i) {
    std::vector<double> x_row(static_cast<size_t>(d)), y_row(static_cast<size_t>(d)), rx(static_cast<size_t>(d));
    for (int64_t c = 0; c < d; ++c) {
      x_row[size_t(c)] = x.data[size_t(i * d + c)];
      y_row[size_t(c)] = y.data[size_t(i * d + c)];
      if (relu) y_row[size_t(c)] = std::max(0.0, y_row[size_t(c)]);
    }
    auto b = [&](int64_t c) { return double(w.at("b_g").data[size_t(c)]); };
    for (int64_t c = 0; c < d; ++c) {
      const size_t o = size_t(i * d + c);
      switch (type) {
        case GateType::Input:
          n.gate[o] = sigmoid(apply_row(w.at("w_g"), x_row, c));
          n.out[o] = n.gate[o] * x_row[size_t(c)] + y_row[size_t(c)];
          break;
        case GateType::Output:
          n.gate[o] = sigmoid(apply_row(w.at("w_g"), x_row, c) - b(c));
          n.out[o] = x_row[size_t(c)] + n.gate[o] * y_row[size_t(c)];
          break;
        case GateType::Highway:
          n.gate[o] = sigmoid(apply_row(w.at("w_g"), x_row, c) + b(c));
          n.out[o] = n.gate[o] * x_row[size_t(c)] + (1 - n.gate[o]) * y_row[size_t(c)];
          break;
        case GateType::Gru:
          n.gate[o] = sigmoid(apply_row(w.at("w_r"), y_row, c) + apply_row(w.at("u_r"), x_row, c));
          n.z[o] = sigmoid(apply_row(w.at("w_z"), y_row, c) + apply_row(w.at("u_z"), x_row, c) - b(c));
          rx[size_t(c)] = n.gate[o] * x_row[size_t(c)];
          break;
        default:
          n.out[o] = x_row[size_t(c)] + y_row[size_t(c)];
      }
    }
    if (type == GateType::Gru)
      for (int64_t c = 0; c < d; ++c) {
        const size_t o = size_t(i * d + c);
        const double h = std::tanh(apply_row(w.at("w_g"), y_row, c) + apply_row(w.at("u_g"), rx, c));
        n.out[o] = (1 - n.z[o]) * x_row[size_t(c)] + n.z[o] * h;
      }
  }
  return n;
}

}  // namespace

TEST_CASE("Vulkan gtrxl_gate matches a naive loop for every gate type", "[vulkan][gtrxl]") {
  const GateType type = GENERATE(GateType::None, GateType::Input, GateType::Output, GateType::Highway, GateType::Gru);
  const bool relu = GENERATE(false, true);
  const int64_t L = GENERATE(1, 9), d = GENERATE(1, 37);
  CAPTURE(int(type), relu, L, d);
  Gpu g;
  uint32_t seed = 300;
  const Tensor x = random_tensor({L, d}, seed++), y = random_tensor({L, d}, seed++);
  std::map<std::string, Tensor> w;
  for (const char* name : {"w_r", "u_r", "w_z", "u_z", "w_g", "u_g"}) w[name] = random_tensor({d, d}, seed++, -0.3f, 0.3f);
  w["b_g"] = random_tensor({d}, seed++, 1.0f, 2.5f);
  const NaiveGate want = naive_gate(type, relu, x, y, w);
  for (Backend* be : {g.vk.get(), g.cpu.get()}) {
    const std::string n = be == g.vk.get() ? "vulkan" : "cpu";
    GateArgs a;
    a.type = type;
    a.relu_y = relu;
    if (type == GateType::Gru)
      for (auto [slot, name] : {std::pair{&GateArgs::w_r, "w_r"}, {&GateArgs::u_r, "u_r"}, {&GateArgs::w_z, "w_z"},
                                {&GateArgs::u_z, "u_z"}, {&GateArgs::u_g, "u_g"}})
        a.*slot = be->upload(w[name]);
    if (type != GateType::None) a.w_g = be->upload(w["w_g"]);
    if (type == GateType::Output || type == GateType::Highway || type == GateType::Gru) a.b_g = be->upload(w["b_g"]);
    const GateResult r = gtrxl_gate(*be, be->upload(x), be->upload(y), a);
    require_close(be->download(r.out).data, want.out, 2e-6, n + " out");
    if (type == GateType::None) {
      CHECK_FALSE(r.gate);
      continue;
    }
    require_close(be->download(r.gate).data, want.gate, 2e-6, n + " gate");
    if (type == GateType::Gru) require_close(be->download(r.z).data, want.z, 2e-6, n + " z");
    else CHECK_FALSE(r.z);
  }
  CHECK(g.vk->fallbacks().empty());
}

TEST_CASE("Vulkan gtrxl_gate names a weight of the wrong shape", "[vulkan][gtrxl]") {
  Gpu g;
  GateArgs a;
  a.type = GateType::Highway;
  a.w_g = g.vk->upload(Tensor({4, 4}));
  a.b_g = g.vk->upload(Tensor({3}));
  const DTensor x = g.vk->upload(Tensor({2, 4}));
  CHECK_THROWS_WITH(gtrxl_gate(*g.vk, x, x, a), Catch::Contains("b_g must be [4], got [3]"));
  a.b_g = g.vk->upload(Tensor({4}));
  CHECK_THROWS_WITH(gtrxl_gate(*g.vk, x, g.vk->upload(Tensor({3, 4})), a),
                    Catch::Contains("one shape"));
}
