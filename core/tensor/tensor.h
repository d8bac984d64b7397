#pragma once
// Host tensors: row-major float32 on Eigen. A Tensor owns a flat buffer and a shape; 2-D views
// of it are Eigen maps, so maths is written with Eigen expressions and no copies.
#include <Eigen/Dense>
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor/packed_matrix.h"

namespace atlas {

using Mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowVec = Eigen::Matrix<float, 1, Eigen::Dynamic>;
using MatMap = Eigen::Map<Mat>;
using ConstMatMap = Eigen::Map<const Mat>;
using Shape = std::vector<int64_t>;

int64_t numel_of(const Shape& shape);
std::string shape_str(const Shape& shape);  // "[512, 256]"

// Allocates as Eigen's aligned_allocator (aligned to Eigen's widest packet, so vectorised
// reductions over a buffer peel the same elements wherever it was allocated and round the same
// from run to run) and default-initialises: a buffer grown without a value (resize(n)) is left
// unwritten, for outputs written in full, which then pay no zero-fill first.
template <class T>
struct UninitAllocator : Eigen::aligned_allocator<T> {
  template <class U>
  struct rebind {
    using other = UninitAllocator<U>;
  };
  UninitAllocator() = default;
  template <class U>
  UninitAllocator(const UninitAllocator<U>&) noexcept {}
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... A>
  void construct(U* p, A&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<A>(args)...);
  }
};
template <class T, class U>
bool operator==(const UninitAllocator<T>&, const UninitAllocator<U>&) { return true; }
template <class T, class U>
bool operator!=(const UninitAllocator<T>&, const UninitAllocator<U>&) { return false; }

using FloatBuffer = std::vector<float, UninitAllocator<float>>;

// Tensor data against plain float vectors, element by element (found by argument-dependent
// lookup through the allocator's namespace).
inline bool operator==(const FloatBuffer& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
}
inline bool operator==(const std::vector<float>& a, const FloatBuffer& b) { return b == a; }
inline bool operator!=(const FloatBuffer& a, const std::vector<float>& b) { return !(a == b); }
inline bool operator!=(const std::vector<float>& a, const FloatBuffer& b) { return !(b == a); }

struct Tensor {
  Shape shape;
  FloatBuffer data;  // C order
  // A model weight held in its file's encoding instead (`data` then empty; shape [rows, cols]).
  // Read it through core/formats/packed_weights.h; mat() refuses it.
  std::shared_ptr<const PackedMatrix> packed;

  Tensor() = default;
  explicit Tensor(Shape s, float fill = 0.0f);
  // Elements left unwritten: for a result the caller writes in full.
  static Tensor uninitialized(Shape s);
  static Tensor from_mat(const Mat& m);  // [rows, cols]

  int64_t numel() const { return packed ? numel_of(shape) : static_cast<int64_t>(data.size()); }
  bool is_packed() const { return packed != nullptr; }
  int64_t dim(size_t i) const { return shape.at(i); }
  // View as a matrix [shape[0], product of the rest]; a 1-D tensor is one row. Throws AtlasError
  // for a packed tensor (its float values do not exist as a whole).
  MatMap mat();
  ConstMatMap mat() const;
};

}  // namespace atlas
