// The tensors of a Hugging Face checkpoint as the family mappings take them (hf_families.h):
// shape-checked, prefix-tolerant, each taken once; plus the small layout helpers.
#include <algorithm>
#include <set>

#include "core/tensor/error.h"
#include "core/formats/hf/hf_families.h"

namespace atlas::hf {

// ---- tensor helpers -----------------------------------------------------------------------

// Cache-blocked and split over the CPU threads: GPT-2's Conv1D weights are stored [in, out]
// and every one of them is transposed at load, which Eigen's element-wise transpose made a
// quarter of opening GPT-2-small (a strided read per element).
Tensor transpose(const Tensor& t) {
  const int64_t rows = t.shape[0], cols = t.shape[1];
  Tensor out({cols, rows});
  constexpr int64_t kTile = 64;
  const int64_t row_tiles = (rows + kTile - 1) / kTile;
  const float* src = t.data.data();
  float* dst = out.data.data();
#pragma omp parallel for schedule(static) if (rows * cols >= (int64_t{1} << 18))
  for (int64_t rt = 0; rt < row_tiles; ++rt) {
    const int64_t r1 = std::min(rows, (rt + 1) * kTile);
    for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
      const int64_t c1 = std::min(cols, c0 + kTile);
      for (int64_t c = c0; c < c1; ++c)
        for (int64_t r = rt * kTile; r < r1; ++r) dst[c * rows + r] = src[r * cols + c];
    }
  }
  return out;
}

Tensor columns(const Tensor& t, int64_t begin, int64_t end) {
  Tensor out({t.shape[0], end - begin});
  out.mat() = t.mat().middleCols(begin, end - begin);
  return out;
}

Tensor slice(const Tensor& t, int64_t begin, int64_t end) {
  Tensor out({end - begin});
  std::copy(t.data.begin() + begin, t.data.begin() + end, out.data.begin());
  return out;
}

// ---- TensorSource -------------------------------------------------------------------------

TensorSource::TensorSource(std::map<std::string, Tensor> tensors,
                           std::map<std::string, std::string> origin_of,
                           std::vector<std::string> prefixes, std::string config_origin)
    : tensors_(std::move(tensors)), origin_of_(std::move(origin_of)),
      prefixes_(std::move(prefixes)), config_origin_(std::move(config_origin)) {
  prefixes_.insert(prefixes_.begin(), "");
}

std::string TensorSource::resolve(const std::string& name) const {
  for (const std::string& p : prefixes_)
    if (tensors_.count(p + name) || used_.count(p + name)) return p + name;
  return {};
}

bool TensorSource::has(const std::string& name) const { return !resolve(name).empty(); }

Tensor TensorSource::take(const std::string& name, const Shape& expected) {
  const std::string key = resolve(name);
  if (key.empty()) {
    std::set<std::string> files;
    for (const auto& [n, file] : origin_of_) files.insert(file);
    std::string list;
    for (const auto& f : files) list += (list.empty() ? "" : ", ") + f;
    throw AtlasError(list + ": missing tensor " + name + " " + shape_str(expected) +
                     " required by " + config_origin_);
  }
  auto it = tensors_.find(key);
  if (it == tensors_.end()) throw AtlasError("internal: tensor " + key + " taken twice");
  if (it->second.shape != expected)
    throw AtlasError(origin_of_[key] + ": tensor " + key + " has shape " +
                     shape_str(it->second.shape) + ", but " + config_origin_ + " implies " +
                     shape_str(expected));
  Tensor t = std::move(it->second);
  tensors_.erase(it);  // frees the float copy as soon as the engine tensor exists
  used_.insert(key);
  return t;
}

std::vector<std::string> TensorSource::leftovers(bool (*skippable)(const std::string&)) const {
  std::vector<std::string> skipped;
  for (const auto& [name, t] : tensors_) {
    if (skippable(name)) {
      skipped.push_back(name);
      continue;
    }
    auto it = origin_of_.find(name);
    throw AtlasError((it == origin_of_.end() ? std::string("checkpoint") : it->second) +
                     ": unexpected tensor " + name + " " + shape_str(t.shape) +
                     " (not part of this model family's layout; is model_type in " +
                     config_origin_ + " right?)");
  }
  return skipped;
}

}  // namespace atlas::hf
