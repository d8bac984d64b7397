// The quantized CPU product (core/backend/quant_matmul.h) per weight type, one thread, on
// Llama-3.2-1B's FFN shape (x [m, 2048] times W [8192, 2048]^T) for m = 1 (a keystroke) to 512 (a
// prompt), in GOP/s (2 m n k / time, the activations' preparation included), beside Eigen's float32
// product on the same shape in the same run and the int8 peak of the kernel's instruction.
//   bench_quant_matmul [--types Q8_0,Q4_K,...] [--m 1,16,128,512] [--kernel avx2|portable]
#include <Eigen/Core>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench/bench_timing.h"
#include "core/backend/quant_matmul.h"
#include "core/backend/quant_matmul_testing.h"
#include "core/formats/ggml_types.h"
#include "core/tensor/random.h"

using namespace atlas;

namespace {

constexpr int64_t kN = 8192, kK = 2048;

void put16(uint8_t* p, uint16_t v) {
  p[0] = uint8_t(v & 255);
  p[1] = uint8_t(v >> 8);
}

// Random quants with finite float16 scales of magnitude 2^-10 .. 2^-3 where the type has them.
std::vector<uint8_t> random_weights(uint32_t type, uint64_t seed) {
  const GgmlTypeInfo info = ggml_type_info(type);
  const int64_t blocks = kN * kK / info.block_elems;
  std::vector<uint8_t> bytes(size_t(blocks * info.block_bytes));
  Rng rng(seed);
  for (size_t i = 0; i + 8 <= bytes.size(); i += 8) {
    const uint64_t r = rng.next();
    std::memcpy(bytes.data() + i, &r, 8);
  }
  auto half = [&] { return uint16_t((rng.next() & 1) << 15 | (5 + rng.next() % 8) << 10 | (rng.next() & 1023)); };
  for (int64_t i = 0; i < blocks; ++i) {
    uint8_t* b = bytes.data() + i * info.block_bytes;
    switch (type) {
      case 0: {
        const float f = float(rng.uniform() - 0.5);
        std::memcpy(b, &f, 4);
        break;
      }
      case 1: case 2: case 6: case 8: put16(b, half()); break;
      case 30: put16(b, uint16_t((rng.next() & 1) << 15 | (120 + rng.next() % 6) << 7 | (rng.next() & 127))); break;
      case 3: case 7: case 12: case 13: put16(b, half()); put16(b + 2, half()); break;
      case 14: put16(b + 208, half()); break;
      default: break;
    }
  }
  return bytes;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= s.size()) {
    const size_t comma = s.find(',', at);
    out.push_back(s.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> types = {"F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1",
                                    "Q5_0", "Q5_1", "Q4_K", "Q5_K", "Q6_K"};
  std::vector<int64_t> ms = {1, 16, 128, 512};
  for (int a = 1; a + 1 < argc; a += 2) {
    const std::string flag = argv[a], value = argv[a + 1];
    if (flag == "--types") {
      types = split(value);
    } else if (flag == "--m") {
      ms.clear();
      for (const std::string& v : split(value)) ms.push_back(std::stoll(v));
    } else if (flag == "--kernel") {
      quant_matmul::force_kernel_for_testing(value.c_str());
    } else {
      std::fprintf(stderr, "usage: bench_quant_matmul [--types Q8_0,Q4_K] [--m 1,512] [--kernel avx2]\n");
      return 2;
    }
  }
  Eigen::setNbThreads(1);
  Rng rng(1);
  std::vector<float> x(size_t(ms.back() > 512 ? ms.back() : 512) * kK);
  for (float& v : x) v = float(rng.normal());

  std::printf("shape: x [m, %lld] W [%lld, %lld]^T, one thread; GOP/s = 2 m n k / time\n", (long long)kK,
              (long long)kN, (long long)kK);
  std::printf("%-8s %-12s", "type", "kernel");
  for (int64_t m : ms) std::printf("  m=%-4lld GOP/s  ms    ", (long long)m);
  std::printf("\n");
  {
    std::vector<float> wf(size_t(kN * kK));
    for (float& v : wf) v = float(rng.uniform() - 0.5);
    std::printf("%-8s %-12s", "eigen", "float32");
    for (int64_t m : ms) {
      Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> X(x.data(), m, kK);
      Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> W(wf.data(), kN, kK);
      Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> Y(m, kN);
      const double t = bench::median_ms(m >= 128 ? 3 : 9, [&] { Y.noalias() = X * W.transpose(); });
      std::printf("  %10.1f %8.2f    ", 2.0 * double(m) * kN * kK / t * 1e-6, t);
    }
    std::printf("\n");
  }
  for (const std::string& name : types) {
    uint32_t type = 0;
    while (type < 64 && !(ggml_type_info(type).name && name == ggml_type_info(type).name)) ++type;
    if (type == 64 || !quant_matmul::supports(type)) {
      std::fprintf(stderr, "unknown or unsupported type %s\n", name.c_str());
      return 2;
    }
    const std::vector<uint8_t> bytes = random_weights(type, 42 + type);
    const GgmlTypeInfo info = ggml_type_info(type);
    PackedMatrix w;
    w.type = type;
    w.rows = kN;
    w.cols = kK;
    w.row_bytes = kK / info.block_elems * info.block_bytes;
    w.data = bytes.data();
    std::printf("%-8s %-12s", name.c_str(), quant_matmul::kernel_name(type));
    for (int64_t m : ms) {
      std::vector<float> y(size_t(m * kN));
      const double t = bench::median_ms(m >= 128 ? 3 : 9, [&] {
        const quant_matmul::PreparedInput px(type, x.data(), m, kK, kK);
        quant_matmul::multiply(w, px, 0, kN, y.data(), kN);
      });
      std::printf("  %10.1f %8.2f    ", 2.0 * double(m) * kN * kK / t * 1e-6, t);
    }
    std::printf("\n");
    std::fflush(stdout);
  }
  return 0;
}
