#pragma once
// Host tensors: row-major float32 on Eigen. A Tensor owns a flat buffer and a shape; 2-D views
// of it are Eigen maps, so maths is written with Eigen expressions and no copies.
#include <Eigen/Dense>
#include <cstdint>
#include <string>
#include <vector>

namespace atlas {

using Mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowVec = Eigen::Matrix<float, 1, Eigen::Dynamic>;
using MatMap = Eigen::Map<Mat>;
using ConstMatMap = Eigen::Map<const Mat>;
using Shape = std::vector<int64_t>;

int64_t numel_of(const Shape& shape);
std::string shape_str(const Shape& shape);  // "[512, 256]"

struct Tensor {
  Shape shape;
  std::vector<float> data;  // C order

  Tensor() = default;
  explicit Tensor(Shape s, float fill = 0.0f);
  static Tensor from_mat(const Mat& m);  // [rows, cols]

  int64_t numel() const { return static_cast<int64_t>(data.size()); }
  int64_t dim(size_t i) const { return shape.at(i); }
  // View as a matrix [shape[0], product of the rest]; a 1-D tensor is one row.
  MatMap mat();
  ConstMatMap mat() const;
};

}  // namespace atlas
