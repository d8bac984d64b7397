// The fast paths of opening a checkpoint: the vectorised weight scan, the blocked
// transpose of GPT-2's Conv1D weights, the chunk-parallel BF16 conversion and the CPU
// backend's in-place weights, each against a plain loop.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "core/backend/backend.h"
#include "core/formats/hf/hf_families.h"
#include "core/formats/safetensors.h"
#include "core/tensor/float_scan.h"
#include "core/tensor/random.h"

using namespace atlas;
namespace fs = std::filesystem;

namespace {

Tensor random_weights(Shape shape, uint64_t seed) {
  Tensor t(std::move(shape));
  Rng rng(seed);
  for (float& v : t.data) v = static_cast<float>(rng.normal() * 3.0);
  return t;
}

}  // namespace

TEST_CASE("scan_floats counts non-finite values and finds the largest finite magnitude",
          "[load]") {
  const float inf = std::numeric_limits<float>::infinity();
  // Lengths below, at and across the parallel block size (65536), odd tails included.
  for (int64_t n : {0, 1, 7, 65536, 65537, 1000003}) {
    Tensor t = random_weights({n}, uint64_t(n) + 1);
    if (n > 5) {
      t.data[size_t(n / 3)] = std::nanf("");
      t.data[size_t(n - 1)] = -inf;
      t.data[size_t(n / 2)] = -1e30f;  // the largest magnitude is negative
      t.data[0] = -0.0f;
    }
    int64_t bad = 0;
    float worst = 0.0f;
    for (float v : t.data) {
      if (!std::isfinite(v)) ++bad;
      else worst = std::max(worst, std::fabs(v));
    }
    const FloatScan s = scan_floats(t.data.data(), n);
    CHECK(s.non_finite == bad);
    CHECK(s.max_abs == worst);
  }
  const float all_bad[3] = {std::nanf(""), inf, -inf};
  CHECK(scan_floats(all_bad, 3).non_finite == 3);
  CHECK(scan_floats(all_bad, 3).max_abs == 0.0f);
  const float subnormal[2] = {std::numeric_limits<float>::denorm_min(), 0.0f};
  CHECK(scan_floats(subnormal, 2).max_abs == std::numeric_limits<float>::denorm_min());
}

TEST_CASE("The blocked transpose of a Conv1D weight equals the element-wise one", "[load][hf]") {
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 1}, {3, 130}, {64, 64}, {200, 71},
                            {768, 1000}}) {
    const Tensor t = random_weights({rows, cols}, uint64_t(rows * 1000 + cols));
    const Tensor out = hf::transpose(t);
    REQUIRE(out.shape == Shape{cols, rows});
    bool same = true;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) same &= out.data[size_t(c * rows + r)] == t.data[size_t(r * cols + c)];
    CHECK(same);
  }
}

TEST_CASE("BF16 tensors convert exactly when converted in parallel, tensor by tensor and chunk by chunk",
          "[load][safetensors]") {
  // Three tensors, 68 MB of BF16: above the size at which tensors are shared out over the
  // threads, and each larger than one 8 MB conversion chunk.
  const std::vector<int64_t> sizes = {5'000'000, 17'000'000, 12'000'000};
  std::vector<std::vector<uint16_t>> bits;
  Rng rng(42);
  std::string header = "{";
  int64_t offset = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    bits.emplace_back(static_cast<size_t>(sizes[k]));
    for (auto& b : bits.back()) b = static_cast<uint16_t>(rng.next() >> 48);
    if (k) header += ',';
    header += "\"w";
    header += std::to_string(k);
    header += "\":";
    header += R"({"dtype":"BF16","shape":[)" + std::to_string(sizes[k]) + "],";
    header += R"("data_offsets":[)" + std::to_string(offset) + ",";
    header += std::to_string(offset + 2 * sizes[k]) + "]}";
    offset += 2 * sizes[k];
  }
  header += "}";
  while (header.size() % 8) header += ' ';
  const fs::path path =
      fs::temp_directory_path() / ("atlas-test-bf16-chunks-" + std::to_string(::getpid()) +
                                   ".safetensors");
  {
    FILE* f = std::fopen(path.c_str(), "wb");
    REQUIRE(f);
    const uint64_t len = header.size();
    std::fwrite(&len, 8, 1, f);
    std::fwrite(header.data(), 1, header.size(), f);
    for (const auto& b : bits) std::fwrite(b.data(), 2, b.size(), f);
    std::fclose(f);
  }
  const SafetensorsFile file = read_safetensors(path.string());
  fs::remove(path);
  const std::vector<std::string> names = {"w0", "w1", "w2"};
  for (size_t k = 0; k < sizes.size(); ++k) {
    const Tensor& w = file.tensors.at(names[k]);
    REQUIRE(w.shape == Shape{sizes[k]});
    int64_t wrong = 0;
    for (int64_t i = 0; i < sizes[k]; ++i) {  // BF16 is the top half of the float32 pattern
      const uint32_t want = uint32_t(bits[k][size_t(i)]) << 16;
      uint32_t got;
      std::memcpy(&got, &w.data[size_t(i)], 4);
      wrong += got != want;
    }
    CHECK(wrong == 0);
  }
}

TEST_CASE("The CPU backend reads a weight in place and computes with it like an uploaded copy",
          "[load][backend]") {
  auto be = make_cpu_backend();
  const Tensor w = random_weights({5, 7}, 3), b = random_weights({5}, 4),
               x = random_weights({3, 7}, 5);
  const DTensor borrowed = be->upload_weight(w);
  CHECK(be->download(borrowed).data == w.data);
  const Tensor via_view = be->download(be->linear(be->upload(x), borrowed, be->upload_weight(b)));
  const Tensor via_copy = be->download(be->linear(be->upload(x), be->upload(w), be->upload(b)));
  CHECK(via_view.data == via_copy.data);
  // Naive oracle of y = x W^T + b.
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t o = 0; o < 5; ++o) {
      double s = b.data[size_t(o)];
      for (int64_t k = 0; k < 7; ++k) s += double(x.data[size_t(i * 7 + k)]) * w.data[size_t(o * 7 + k)];
      CHECK(via_view.data[size_t(i * 5 + o)] == Approx(s).epsilon(1e-5));
    }
  CHECK(be->download(borrowed).data == w.data);  // the op did not write the weight
}

TEST_CASE("Skipped safetensors tensors are validated and listed, not converted", "[load][safetensors]") {
  const fs::path path = fs::temp_directory_path() /
                        ("atlas-test-skip-" + std::to_string(::getpid()) + ".safetensors");
  auto write = [&](const std::string& header_json, size_t data_bytes) {
    std::string header = header_json;
    while (header.size() % 8) header += ' ';
    FILE* f = std::fopen(path.c_str(), "wb");
    REQUIRE(f);
    const uint64_t len = header.size();
    std::fwrite(&len, 8, 1, f);
    std::fwrite(header.data(), 1, header.size(), f);
    const std::vector<float> data(data_bytes / 4, 1.5f);
    std::fwrite(data.data(), 1, data_bytes, f);
    std::fclose(f);
  };
  auto is_buffer = [](const std::string& name) { return name == "h.0.attn.bias"; };
  write(R"({"h.0.attn.bias":{"dtype":"F32","shape":[1,1,2,2],"data_offsets":[0,16]},)"
        R"("h.0.w":{"dtype":"F32","shape":[3],"data_offsets":[16,28]}})", 28);
  const SafetensorsFile f = read_safetensors(path.string(), is_buffer);
  CHECK(f.tensors.size() == 1);
  CHECK(f.tensors.at("h.0.w").data == std::vector<float>{1.5f, 1.5f, 1.5f});
  REQUIRE(f.unread.count("h.0.attn.bias"));
  CHECK(f.unread.at("h.0.attn.bias") == Shape{1, 1, 2, 2});
  // A skipped tensor whose offsets lie is still an error naming it.
  write(R"({"h.0.attn.bias":{"dtype":"F32","shape":[1,1,2,2],"data_offsets":[0,20]},)"
        R"("h.0.w":{"dtype":"F32","shape":[3],"data_offsets":[16,28]}})", 28);
  CHECK_THROWS_WITH(read_safetensors(path.string(), is_buffer),
                    Catch::Contains("h.0.attn.bias"));
  fs::remove(path);
}

TEST_CASE("A BF16 tensor at an odd byte offset converts exactly", "[load][safetensors]") {
  // One U8 byte first: the BF16 data then starts at an odd address (the vectorised widening
  // needs 2-byte alignment and falls back to the byte loop).
  const std::vector<uint16_t> bits = {0x3F80, 0xC040, 0x0001, 0x7F80, 0xFFC1};  // 1, -3, subnormal, inf, nan
  std::string header = R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                       R"("b":{"dtype":"BF16","shape":[5],"data_offsets":[1,11]}})";
  while (header.size() % 8) header += ' ';
  std::vector<uint8_t> file(8);
  const uint64_t len = header.size();
  std::memcpy(file.data(), &len, 8);
  file.insert(file.end(), header.begin(), header.end());
  file.push_back(7);
  for (uint16_t b : bits) {
    file.push_back(uint8_t(b & 0xff));
    file.push_back(uint8_t(b >> 8));
  }
  const SafetensorsFile f = parse_safetensors(file.data(), file.size(), "odd");
  const Tensor& t = f.tensors.at("b");
  for (size_t i = 0; i < bits.size(); ++i) {
    uint32_t got;
    std::memcpy(&got, &t.data[i], 4);
    CHECK(got == uint32_t(bits[i]) << 16);
  }
}
