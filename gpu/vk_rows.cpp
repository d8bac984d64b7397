// Row slicing and stacking on the device (Transformer-XL's memory and segments): buffer
// copies recorded like any other command, so no host round trip and no extra submission.
#include "core/tensor/error.h"
#include "gpu/vk_backend_impl.h"

namespace atlas::vk {

DTensor VulkanBackend::slice_rows(const DTensor& x, int64_t begin, int64_t count) {
  const GpuBuffer& bx = buf(x, "slice_rows", "x");
  if (x.shape.size() != 2 || begin < 0 || count < 0 || begin + count > x.shape[0])
    throw AtlasError("slice_rows: rows [" + std::to_string(begin) + ", " +
                     std::to_string(begin + count) + ") are not inside " + shape_str(x.shape));
  DTensor out = make({count, x.shape[1]});
  const uint64_t row_bytes = static_cast<uint64_t>(x.shape[1]) * 4;
  rec_->copy(bx, buf(out, "slice_rows", "output"), count * row_bytes, begin * row_bytes, 0);
  return out;
}

DTensor VulkanBackend::concat_rows(const DTensor& a, const DTensor& b) {
  const GpuBuffer& ba = buf(a, "concat_rows", "a");
  const GpuBuffer& bb = buf(b, "concat_rows", "b");
  if (a.shape.size() != 2 || b.shape.size() != 2 || a.shape[1] != b.shape[1])
    throw AtlasError("concat_rows: " + shape_str(a.shape) + " and " + shape_str(b.shape) +
                     " are not matrices with the same number of columns");
  DTensor out = make({a.shape[0] + b.shape[0], b.shape[1]});
  const GpuBuffer& bo = buf(out, "concat_rows", "output");
  const uint64_t a_bytes = static_cast<uint64_t>(a.numel()) * 4;
  rec_->access({&ba, &bb}, {&bo});  // the two copies write disjoint parts: one declaration
  rec_->copy(ba, bo, a_bytes, 0, 0, true);
  rec_->copy(bb, bo, static_cast<uint64_t>(b.numel()) * 4, 0, a_bytes, true);
  return out;
}

}  // namespace atlas::vk
