#include "core/tensor/tensor.h"

#include <sstream>

#include "core/tensor/error.h"

namespace atlas {

int64_t numel_of(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shape_str(const Shape& shape) {
  std::ostringstream out;
  out << '[';
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << ']';
  return out.str();
}

Tensor::Tensor(Shape s, float fill) : shape(std::move(s)) {
  for (int64_t d : shape)
    if (d < 0) throw AtlasError("negative dimension in tensor shape " + shape_str(shape));
  data.assign(static_cast<size_t>(numel_of(shape)), fill);
}

Tensor Tensor::uninitialized(Shape s) {
  for (int64_t d : s)
    if (d < 0) throw AtlasError("negative dimension in tensor shape " + shape_str(s));
  Tensor t;
  t.data.resize(static_cast<size_t>(numel_of(s)));  // default-initialised: not written
  t.shape = std::move(s);
  return t;
}

Tensor Tensor::from_mat(const Mat& m) {
  Tensor t({m.rows(), m.cols()});
  MatMap(t.data.data(), m.rows(), m.cols()) = m;
  return t;
}

static std::pair<int64_t, int64_t> matrix_dims(const Shape& shape, int64_t numel) {
  if (shape.empty()) return {1, 1};
  if (shape.size() == 1) return {1, shape[0]};
  int64_t rows = shape[0];
  return {rows, rows == 0 ? 0 : numel / rows};
}

static void refuse_packed(const Tensor& t) {
  if (t.packed)
    throw AtlasError("a weight " + shape_str(t.shape) +
                     " held in its file's encoding (quantized or 16-bit) was read as float32 as a "
                     "whole; this operation does not support such models yet");
}

MatMap Tensor::mat() {
  refuse_packed(*this);
  auto [r, c] = matrix_dims(shape, numel());
  return MatMap(data.data(), r, c);
}

ConstMatMap Tensor::mat() const {
  refuse_packed(*this);
  auto [r, c] = matrix_dims(shape, numel());
  return ConstMatMap(data.data(), r, c);
}

}  // namespace atlas
