// Model weights held in their file's encoding (core/tensor/packed_matrix.h) on the Vulkan
// device: upload_weight copies the encoded rows as they are stored (a Q4_K matrix occupies its
// 4.5 bits a value, not a float32 copy), linear multiplies by them through linear_packed.comp
// and embedding gathers from them through embedding_packed.comp, both dequantizing in the
// shader (shaders/dequant.glsl) with dequantize_ggml's arithmetic: float32 activations times
// the dequantized weights, the CPU backend's exact products. Any other op refuses such a
// tensor (buf()); download() converts it on the host.
#include <algorithm>
#include <cstring>

#include "core/formats/ggml_types.h"
#include "core/formats/packed_weights.h"
#include "core/tensor/error.h"
#include "gpu/push_constants.h"
#include "gpu/vk_backend_impl.h"

namespace atlas::vk {

namespace {

// The ggml types dequant.glsl reads (F32 needs no shader: its bytes are float32 already).
bool device_reads_encoded(uint32_t type) {
  using namespace ggml_type;
  switch (type) {
    case F16: case BF16: case Q4_0: case Q4_1: case Q5_0: case Q5_1: case Q8_0:
    case Q4_K: case Q5_K: case Q6_K:
      return true;
    default:
      return false;
  }
}

uint32_t packed_u32(uint64_t v) { return static_cast<uint32_t>(v); }
uint64_t round_up4(uint64_t v) { return (v + 3) & ~uint64_t{3}; }
bool packed_fits_u32(uint64_t n) { return n < (1ull << 31); }

}  // namespace

DTensor VulkanBackend::upload_weight(const Tensor& host) {
  if (!host.packed) return upload(host);
  const PackedMatrix& m = *host.packed;
  const bool matrix = host.shape == Shape{m.rows, m.cols};
  if (matrix && m.type == ggml_type::F32 && m.row_bytes == 4 * m.cols) {  // float32 in the file: as it is
    auto s = std::make_shared<VkTensorStorage>();
    s->buffer = upload_bytes(m.data, static_cast<uint64_t>(m.bytes()));
    s->backend_id = instance_id();
    return DTensor{host.shape, std::move(s)};
  }
  if (!matrix || !device_reads_encoded(m.type)) return Backend::upload_weight(host);
  auto s = std::make_shared<VkTensorStorage>();
  s->buffer = upload_bytes(m.data, static_cast<uint64_t>(m.bytes()));
  s->backend_id = instance_id();
  s->packed = host.packed;
  return DTensor{host.shape, std::move(s)};
}

Tensor VulkanBackend::download_packed(const DTensor& t, const VkTensorStorage& s) {
  // The bytes on the device, read back and converted: the values the shaders multiply by.
  const PackedMatrix& m = *s.packed;
  Tensor host(t.shape);
  const uint64_t bytes = static_cast<uint64_t>(m.bytes());
  if (bytes == 0) return host;
  auto rb = ctx_->acquire(BufferKind::Readback, bytes);
  rec_->copy(*s.buffer, *rb, bytes);
  rec_->need_host_read();
  rec_->finish();
  std::vector<uint8_t> encoded(bytes);
  std::memcpy(encoded.data(), rb->mapped, bytes);  // mapped memory may be uncached
  dequantize_ggml(m.type, encoded.data(), m.rows * m.cols / ggml_type_info(m.type).block_elems,
                  host.data.data());
  return host;
}

DTensor VulkanBackend::linear_packed(const DTensor& x, const DTensor& w, const VkTensorStorage& sw,
                                     const DTensor& b) {
  const GpuBuffer& bx = buf(x, "linear", "input");
  const int64_t in = w.shape[1], out = w.shape[0];
  if (x.shape.empty() || x.shape.back() != in)
    fail("linear", "input " + shape_str(x.shape) + " does not match weight " + shape_str(w.shape));
  const GpuBuffer* bb = b ? &buf(b, "linear", "bias") : nullptr;
  if (b && b.numel() != out)
    fail("linear", "bias " + shape_str(b.shape) + " for " + std::to_string(out) + " outputs");
  const PackedMatrix& pm = *sw.packed;
  const GgmlTypeInfo ti = ggml_type_info(pm.type);
  const uint64_t m = in > 0 ? static_cast<uint64_t>(x.numel() / in)
                            : static_cast<uint64_t>(x.shape.size() > 1 ? x.shape[0] : 1);
  const uint64_t K = static_cast<uint64_t>(in), N = static_cast<uint64_t>(out);
  const uint64_t row_bytes = static_cast<uint64_t>(pm.row_bytes);
  const uint64_t align = ctx_->props.limits.minStorageBufferOffsetAlignment;
  const uint64_t per = std::min<uint64_t>(rows_per_window(std::max(K, N)), 65535ull * 64);
  // Weight rows (output columns) per bound window of the encoded matrix.
  const uint64_t room = ctx_->max_binding_bytes > align + 4 ? ctx_->max_binding_bytes - align - 4 : 0;
  const uint64_t cols_per =
      std::min<uint64_t>(row_bytes > 0 ? room / row_bytes : 65535ull * 64, 65535ull * 64);
  if (!fits(N) || per == 0 || cols_per == 0 || !packed_fits_u32(m * K) || !packed_fits_u32(m * N)) {
    note_fallback("linear: weight " + std::string(ti.name) + " " + shape_str(w.shape) +
                  " or input " + shape_str(x.shape) +
                  " exceeds the device's storage-buffer range; ran on the CPU backend");
    return from_cpu(cpu().linear(to_cpu(x), cpu().upload(download(w)), to_cpu(b)));
  }
  DTensor y = make({static_cast<int64_t>(m), out});
  if (m == 0 || N == 0) return y;
  const GpuBuffer& by = buf(y, "linear", "output");
  const GpuBuffer& bias = bb ? *bb : *dummy_;
  const GpuBuffer& bw = *sw.buffer;
  const Pipeline& p = pipes_->get(ShaderId::LinearPacked);
  rec_->access({&bx, &bw, &bias}, {&by});
  for (uint64_t r0 = 0; r0 < m; r0 += per) {
    const uint64_t cnt = std::min(per, m - r0);
    const Window wx = window(bx, r0 * K, cnt * K), wy = window(by, r0 * N, cnt * N);
    for (uint64_t c0 = 0; c0 < N; c0 += cols_per) {
      const uint64_t cc = std::min(cols_per, N - c0);
      const uint64_t start = c0 * row_bytes / align * align;
      const uint64_t end = std::max(start + 4, round_up4((c0 + cc) * row_bytes));
      const LinearPackedPC pc{packed_u32(r0),        packed_u32(cnt),
                              packed_u32(N),         packed_u32(K),
                              wx.base,               wy.base,
                              bb ? 1u : 0u,          packed_u32(c0),
                              packed_u32(cc),        pm.type,
                              packed_u32(row_bytes), packed_u32(c0 * row_bytes - start),
                              packed_u32(ti.block_elems), packed_u32(ti.block_bytes)};
      rec_->dispatch(p, {wx.binding, Binding{&bw, start, end - start}, whole(bias, bb ? N : 1),
                         wy.binding},
                     pc, packed_u32((cc + 63) / 64), packed_u32((cnt + 63) / 64));
    }
  }
  return y;
}

DTensor VulkanBackend::embedding_packed(const DTensor& table, const VkTensorStorage& st,
                                        const std::vector<int32_t>& ids, float s) {
  const PackedMatrix& pm = *st.packed;
  const int64_t vocab = table.shape[0], d = table.shape[1];
  for (int32_t id : ids)
    if (id < 0 || id >= vocab)
      fail("embedding", "token id " + std::to_string(id) + " outside vocab of " +
                            std::to_string(vocab));
  const GgmlTypeInfo ti = ggml_type_info(pm.type);
  const uint64_t L = ids.size(), D = static_cast<uint64_t>(d);
  const uint64_t table_bytes = static_cast<uint64_t>(pm.bytes());
  const uint64_t per = rows_per_window(D);
  if (round_up4(table_bytes) > ctx_->max_binding_bytes || !fits(L) || per == 0 ||
      !packed_fits_u32(L * D)) {
    // The table cannot be bound whole: the gathered rows are converted on the host instead
    // (a few rows of the matrix the upload kept, not the table).
    note_fallback("embedding: table " + std::string(ti.name) + " " + shape_str(table.shape) +
                  " exceeds the device's storage-buffer range; its gathered rows were converted "
                  "on the host");
    Tensor rows({static_cast<int64_t>(L), d});
    for (uint64_t i = 0; i < L; ++i) {
      float* row = rows.data.data() + i * D;
      dequantize_rows(pm, ids[i], 1, row);
      for (uint64_t c = 0; c < D; ++c) row[c] *= s;
    }
    return upload(rows);
  }
  DTensor y = make({static_cast<int64_t>(L), d});
  if (L == 0 || D == 0) return y;
  const GpuBuffer& by = buf(y, "embedding", "output");
  auto bids = upload_bytes(ids.data(), L * 4);
  const Pipeline& p = pipes_->get(ShaderId::EmbeddingPacked);
  rec_->access({st.buffer.get(), bids.get()}, {&by});
  const Binding bt{st.buffer.get(), 0, std::max<uint64_t>(4, round_up4(table_bytes))};
  for (uint64_t r0 = 0; r0 < L; r0 += per) {
    const uint64_t cnt = std::min(per, L - r0);
    const Window wy = window(by, r0 * D, cnt * D);
    const EmbeddingPackedPC pc{packed_u32(r0),         packed_u32(cnt),
                               packed_u32(D),          packed_u32(vocab),
                               wy.base,                pm.type,
                               packed_u32(pm.row_bytes), packed_u32(ti.block_elems),
                               packed_u32(ti.block_bytes), s};
    rec_->dispatch(p, {bt, whole(*bids, L), wy.binding}, pc,
                   packed_u32(std::min<uint64_t>(cnt, 65535)));
  }
  return y;
}

}  // namespace atlas::vk
