// The Vulkan backend: factory, transfers and the non-attention ops (attention is in
// vk_attention.cpp). See vk_backend_impl.h for the overall shape.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "core/formats/ggml_types.h"
#include "core/tensor/error.h"
#include "gpu/push_constants.h"
#include "gpu/vk_backend_impl.h"

namespace atlas {

namespace vk {

namespace {

int64_t last_dim(const DTensor& t) { return t.shape.empty() ? 1 : t.shape.back(); }

// Shaders index with 32-bit unsigned integers.
bool fits_u32(uint64_t n) { return n < (1ull << 31); }

uint32_t u32(uint64_t v) { return static_cast<uint32_t>(v); }

uint32_t elt_groups(uint64_t n) {  // grid-stride loops cover the rest
  return u32(std::clamp<uint64_t>((n + 127) / 128, 1, 4096));
}

std::string mib(uint64_t bytes) {
  if (bytes < (1u << 20)) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes >> 20) + " MiB";
}

}  // namespace

[[noreturn]] void fail(const char* op, const std::string& what) {
  throw AtlasError(std::string("vulkan backend: ") + op + ": " + what);
}

VulkanBackend::VulkanBackend(const VulkanOptions& options) {
  ctx_ = Context::create(options);
  pipes_ = std::make_unique<Pipelines>(ctx_, options.pipeline_cache_dir);
  rec_ = std::make_unique<Recorder>(ctx_);
  ctx_->make_idle = [this] { rec_->finish(); };
  dummy_ = ctx_->acquire(BufferKind::Device, 256);
}

VulkanBackend::~VulkanBackend() {
  try {
    rec_->finish();
  } catch (...) {
  }
  ctx_->make_idle = nullptr;  // tensors may keep the context alive after the backend
  rec_.reset();
  pipes_.reset();
  dummy_.reset();
  cpu_.reset();
}

VulkanBackendStats VulkanBackend::stats() const {
  VulkanBackendStats s;
  s.device_name = ctx_->info.name;
  s.submissions = rec_->submissions();
  s.dispatches = rec_->dispatches();
  s.barriers = rec_->barriers();
  s.buffers_allocated = ctx_->buffers_allocated;
  s.buffers_reused = ctx_->buffers_reused;
  s.pipelines_created = pipes_->created();
  s.pipeline_cache_bytes_loaded = pipes_->cache_bytes_loaded();
  s.pipeline_cache_path = pipes_->cache_path();
  return s;
}

const GpuBuffer& VulkanBackend::buf(const DTensor& t, const char* op, const char* what) const {
  if (!t.storage) fail(op, std::string(what) + " is an empty tensor handle");
  auto* s = dynamic_cast<const VkTensorStorage*>(t.storage.get());
  if (!s || s->backend_id != instance_id())
    fail(op, std::string(what) + " " + shape_str(t.shape) +
                 " belongs to another backend; upload it with this one");
  if (s->packed)
    fail(op, std::string(what) + " " + shape_str(t.shape) + " is a weight held as " +
                 ggml_type_info(s->packed->type).name +
                 " (its file's encoding); only linear and embedding read it, this op reads "
                 "float32 (download() gives its values)");
  return *s->buffer;
}

const VkTensorStorage* VulkanBackend::packed_of(const DTensor& t, const char* op,
                                                const char* what) const {
  if (!t.storage) fail(op, std::string(what) + " is an empty tensor handle");
  auto* s = dynamic_cast<const VkTensorStorage*>(t.storage.get());
  if (!s || s->backend_id != instance_id())
    fail(op, std::string(what) + " " + shape_str(t.shape) +
                 " belongs to another backend; upload it with this one");
  return s->packed ? s : nullptr;
}

DTensor VulkanBackend::make(Shape shape) {
  const int64_t n = numel_of(shape);
  auto s = std::make_shared<VkTensorStorage>();
  s->buffer = ctx_->acquire(BufferKind::Device, static_cast<uint64_t>(n) * 4);
  s->backend_id = instance_id();
  return DTensor{std::move(shape), std::move(s)};
}

std::shared_ptr<GpuBuffer> VulkanBackend::upload_bytes(const void* data, uint64_t bytes) {
  auto dst = ctx_->acquire(BufferKind::Device, bytes);
  if (bytes == 0) return dst;
  // Always through a staging buffer, even where device memory is host-visible (lavapipe,
  // UMA): a pooled buffer may still be read by recorded commands, so the host must not
  // write it directly; the copy is ordered by the recorder's barriers instead.
  auto staging = ctx_->acquire(BufferKind::Staging, bytes);
  std::memcpy(staging->mapped, data, bytes);
  rec_->copy(*staging, *dst, bytes);
  rec_->keep(std::move(staging));
  return dst;
}

DTensor VulkanBackend::upload(const Tensor& host) {
  if (static_cast<int64_t>(host.data.size()) != numel_of(host.shape))
    throw AtlasError("vulkan backend: upload: tensor " + shape_str(host.shape) + " holds " +
                     std::to_string(host.data.size()) + " values");
  auto s = std::make_shared<VkTensorStorage>();
  s->buffer = upload_bytes(host.data.data(), host.data.size() * 4);
  s->backend_id = instance_id();
  return DTensor{host.shape, std::move(s)};
}

Tensor VulkanBackend::download(const DTensor& t) {
  if (const VkTensorStorage* p = packed_of(t, "download", "tensor")) return download_packed(t, *p);
  const GpuBuffer& src = buf(t, "download", "tensor");
  Tensor host(t.shape);
  const uint64_t bytes = host.data.size() * 4;
  if (bytes == 0) return host;
  auto rb = ctx_->acquire(BufferKind::Readback, bytes);
  rec_->copy(src, *rb, bytes);
  rec_->need_host_read();
  rec_->finish();
  std::memcpy(host.data.data(), rb->mapped, bytes);
  return host;
}

std::vector<Tensor> VulkanBackend::download_all(const std::vector<DTensor>& ts) {
  // Record every copy, then wait once: one submission however many arrays a run traced.
  // (An encoded weight, asked for explicitly, is read back and converted by download().)
  for (const DTensor& t : ts)
    if (packed_of(t, "download", "tensor")) {
      std::vector<Tensor> out;
      for (const DTensor& u : ts) out.push_back(download(u));
      return out;
    }
  std::vector<Tensor> out;
  std::vector<std::shared_ptr<GpuBuffer>> readback;
  out.reserve(ts.size());
  readback.reserve(ts.size());
  for (const DTensor& t : ts) {
    const GpuBuffer& src = buf(t, "download", "tensor");
    out.emplace_back(t.shape);
    const uint64_t bytes = out.back().data.size() * 4;
    readback.push_back(bytes ? ctx_->acquire(BufferKind::Readback, bytes) : nullptr);
    if (bytes) rec_->copy(src, *readback.back(), bytes);
  }
  rec_->need_host_read();
  rec_->finish();
  for (size_t i = 0; i < ts.size(); ++i)
    if (readback[i]) std::memcpy(out[i].data.data(), readback[i]->mapped, out[i].data.size() * 4);
  return out;
}

// ---- windows -------------------------------------------------------------------------

VulkanBackend::MaskBuffers VulkanBackend::upload_mask(const AttentionMask& mask, int64_t lq, int64_t lk,
                                                      bool window_in_kernel) {
  MaskBuffers m;
  if (!mask.key_valid.empty() &&
      std::any_of(mask.key_valid.begin(), mask.key_valid.end(), [](uint8_t b) { return !b; })) {
    std::vector<uint32_t> words(mask.key_valid.begin(), mask.key_valid.end());
    m.key_valid = upload_bytes(words.data(), words.size() * 4);
  }
  if (!mask.allowed.empty() && lk > 0) {
    std::vector<uint32_t> bits(static_cast<size_t>((lq * lk + 31) / 32), 0u);
    for (size_t idx = 0; idx < mask.allowed.size(); ++idx)
      if (mask.allowed[idx]) bits[idx >> 5] |= 1u << (idx & 31);
    m.allowed = upload_bytes(bits.data(), bits.size() * 4);
  }
  if (mask.causal && mask.window > 0 && lk > 0 && !window_in_kernel) {  // the window as the dense pattern
    std::vector<uint32_t> bits(static_cast<size_t>((lq * lk + 31) / 32), 0u);
    for (int64_t i = 0; i < lq; ++i)
      for (int64_t j = 0; j < lk; ++j)
        if (mask.is_allowed(i, j, lk)) bits[size_t(i * lk + j) >> 5] |= 1u << (size_t(i * lk + j) & 31);
    m.allowed = upload_bytes(bits.data(), bits.size() * 4);
  }
  return m;
}

bool VulkanBackend::fits(uint64_t elems) const { return elems * 4 <= ctx_->max_binding_bytes; }

uint32_t VulkanBackend::max_storage_buffers() const {
  return ctx_->props.limits.maxPerStageDescriptorStorageBuffers;
}

uint64_t VulkanBackend::rows_per_window(uint64_t row_elems) const {
  const uint64_t align = ctx_->props.limits.minStorageBufferOffsetAlignment;
  if (ctx_->max_binding_bytes <= align) return 0;
  if (row_elems == 0) return 1ull << 30;
  return (ctx_->max_binding_bytes - align) / (row_elems * 4);
}

Binding VulkanBackend::whole(const GpuBuffer& b, uint64_t n) const {
  // Explicit range: the pooled buffer may be larger than the tensor (and than the limit).
  return Binding{&b, 0, std::max<uint64_t>(4, n * 4)};
}

Window VulkanBackend::window(const GpuBuffer& b, uint64_t first, uint64_t count) const {
  const uint64_t align = ctx_->props.limits.minStorageBufferOffsetAlignment;
  const uint64_t start = first * 4 / align * align;  // multiple of 4: align is a power of 2 >= 4
  const uint64_t end = std::max(start + 4, (first + count) * 4);
  return Window{Binding{&b, start, end - start}, u32(start / 4)};
}

// ---- fallback to the CPU backend ------------------------------------------------------

// Variant ops without a kernel are computed by core/ on the host and reported as fallbacks.
bool VulkanBackend::supports(Op op) const { return vk::has_kernel(op); }

bool VulkanBackend::supports_module_op(const ModuleOp& op) const {
  return find_variant_kernel(op.name) != nullptr;
}

std::vector<DTensor> VulkanBackend::run_module_op(const ModuleOp& op,
                                                  const std::vector<DTensor>& inputs,
                                                  const void* args) {
  if (const VariantKernel* k = find_variant_kernel(op.name)) return k->run(*this, inputs, args);
  return Backend::run_module_op(op, inputs, args);
}

std::vector<DTensor> VulkanBackend::on_host(const ModuleOp& op, const std::vector<DTensor>& inputs,
                                            const void* args, const std::string& why) {
  note_fallback(why);
  return run_module_op_on_host(*this, op, inputs, args);
}

void VulkanBackend::note_fallback(const std::string& line) {
  if (fallback_seen_.insert(line).second) {
    fallbacks_.push_back(line);
    std::fprintf(stderr, "atlas: vulkan: %s\n", line.c_str());
  }
}

Backend& VulkanBackend::cpu() {
  if (!cpu_) cpu_ = make_cpu_backend();
  return *cpu_;
}

DTensor VulkanBackend::to_cpu(const DTensor& t) {
  if (!t) return {};
  return cpu().upload(download(t));
}

DTensor VulkanBackend::from_cpu(const DTensor& t) {
  if (!t) return {};
  return upload(cpu().download(t));
}

// ---- elementwise ---------------------------------------------------------------------

DTensor VulkanBackend::elementwise(const char* op, ShaderId id, const DTensor& a,
                                   const DTensor* b, float s, uint32_t kind) {
  const GpuBuffer& ba = buf(a, op, "input");
  const GpuBuffer* bb = b ? &buf(*b, op, "second input") : nullptr;
  if (b && a.shape != b->shape) fail(op, shape_str(a.shape) + " and " + shape_str(b->shape));
  const uint64_t n = static_cast<uint64_t>(a.numel());
  if (!fits_u32(n)) {
    note_fallback(std::string(op) + ": " + std::to_string(n) +
                  " elements exceed 32-bit shader indexing; ran on the CPU backend");
    DTensor ca = to_cpu(a);
    if (id == ShaderId::Add) return from_cpu(cpu().add(ca, to_cpu(*b)));
    if (id == ShaderId::Mul) return from_cpu(cpu().mul(ca, to_cpu(*b)));
    if (id == ShaderId::Scale) return from_cpu(cpu().scale(ca, s));
    return from_cpu(cpu().activation(ca, static_cast<Activation>(kind)));
  }
  DTensor y = make(a.shape);
  if (n == 0) return y;
  const GpuBuffer& by = buf(y, op, "output");
  const Pipeline& p = pipes_->get(id);
  if (bb)
    rec_->access({&ba, bb}, {&by});
  else
    rec_->access({&ba}, {&by});
  const uint64_t block = rows_per_window(1) / 64 * 64;
  for (uint64_t i0 = 0; i0 < n; i0 += block) {
    const uint64_t cnt = std::min(block, n - i0);
    const Window wa = window(ba, i0, cnt), wy = window(by, i0, cnt);
    switch (id) {
      case ShaderId::Add:
      case ShaderId::Mul: {
        const Window wb = window(*bb, i0, cnt);
        rec_->dispatch(p, {wa.binding, wb.binding, wy.binding},
                       AddPC{u32(i0), u32(cnt), wa.base, wb.base, wy.base}, elt_groups(cnt));
        break;
      }
      case ShaderId::Scale:
        rec_->dispatch(p, {wa.binding, wy.binding}, ScalePC{u32(i0), u32(cnt), wa.base, wy.base, s},
                       elt_groups(cnt));
        break;
      default:
        rec_->dispatch(p, {wa.binding, wy.binding},
                       ActivationPC{u32(i0), u32(cnt), wa.base, wy.base, kind}, elt_groups(cnt));
        break;
    }
  }
  return y;
}

DTensor VulkanBackend::add(const DTensor& a, const DTensor& b) {
  return elementwise("add", ShaderId::Add, a, &b, 0.0f, 0);
}

DTensor VulkanBackend::scale(const DTensor& x, float s) {
  return elementwise("scale", ShaderId::Scale, x, nullptr, s, 0);
}

DTensor VulkanBackend::activation(const DTensor& x, Activation kind) {
  return elementwise("activation", ShaderId::Activation, x, nullptr, 0.0f,
                     static_cast<uint32_t>(kind));
}

// ---- row ops -------------------------------------------------------------------------

DTensor VulkanBackend::row_op(const char* op, ShaderId id, const DTensor& x, const DTensor* p1,
                              const DTensor* p2, float eps) {
  const GpuBuffer& bx = buf(x, op, "input");
  const uint64_t d = static_cast<uint64_t>(last_dim(x));
  const GpuBuffer* b1 = p1 ? &buf(*p1, op, id == ShaderId::ScaleNorm ? "g" : "gamma") : nullptr;
  if (id == ShaderId::RmsNorm && p1->numel() != static_cast<int64_t>(d))
    fail(op, "weight " + shape_str(p1->shape) + " must have " + std::to_string(d) +
                 " elements for input " + shape_str(x.shape));
  const GpuBuffer* b2 = p2 ? &buf(*p2, op, "beta") : nullptr;
  if (id == ShaderId::LayerNorm &&
      (p1->numel() != static_cast<int64_t>(d) || p2->numel() != static_cast<int64_t>(d)))
    fail(op, "gamma " + shape_str(p1->shape) + " / beta " + shape_str(p2->shape) +
                 " must have " + std::to_string(d) + " elements for input " + shape_str(x.shape));
  if (id == ShaderId::ScaleNorm && p1->numel() != 1)
    fail(op, "g must have one element, got " + shape_str(p1->shape));
  const uint64_t n = static_cast<uint64_t>(x.numel());
  const uint64_t per = rows_per_window(d);
  if (!fits_u32(n) || per == 0 || (p1 && !fits(static_cast<uint64_t>(p1->numel())))) {
    note_fallback(std::string(op) + ": rows of " + std::to_string(d) +
                  " exceed the device's buffer limits; ran on the CPU backend");
    DTensor cx = to_cpu(x);
    if (id == ShaderId::LayerNorm)
      return from_cpu(cpu().layer_norm(cx, to_cpu(*p1), to_cpu(*p2), eps));
    if (id == ShaderId::ScaleNorm) return from_cpu(cpu().scale_norm(cx, to_cpu(*p1), eps));
    if (id == ShaderId::RmsNorm) return from_cpu(cpu().rms_norm(cx, to_cpu(*p1), eps));
    return from_cpu(cpu().row_normalize(cx, eps));
  }
  DTensor y = make(x.shape);
  if (n == 0) return y;
  const GpuBuffer& by = buf(y, op, "output");
  const Pipeline& p = pipes_->get(id);
  if (b2)
    rec_->access({&bx, b1, b2}, {&by});
  else if (b1)
    rec_->access({&bx, b1}, {&by});
  else
    rec_->access({&bx}, {&by});
  const uint64_t rows = n / d;
  const uint64_t block = std::min<uint64_t>(per, 1u << 30);
  for (uint64_t r0 = 0; r0 < rows; r0 += block) {
    const uint64_t cnt = std::min(block, rows - r0);
    const Window wx = window(bx, r0 * d, cnt * d), wy = window(by, r0 * d, cnt * d);
    const RowPC pc{u32(r0), u32(cnt), u32(d), wx.base, wy.base, eps};
    const uint32_t groups = u32(std::min<uint64_t>(cnt, 65535));
    if (id == ShaderId::LayerNorm)
      rec_->dispatch(p, {wx.binding, whole(*b1, d), whole(*b2, d), wy.binding}, pc, groups);
    else if (id == ShaderId::ScaleNorm)
      rec_->dispatch(p, {wx.binding, whole(*b1, 1), wy.binding}, pc, groups);
    else if (id == ShaderId::RmsNorm)
      rec_->dispatch(p, {wx.binding, whole(*b1, d), wy.binding}, pc, groups);
    else
      rec_->dispatch(p, {wx.binding, wy.binding}, pc, groups);
  }
  return y;
}

DTensor VulkanBackend::layer_norm(const DTensor& x, const DTensor& gamma, const DTensor& beta,
                                  float eps) {
  return row_op("layer_norm", ShaderId::LayerNorm, x, &gamma, &beta, eps);
}

DTensor VulkanBackend::scale_norm(const DTensor& x, const DTensor& g, float eps) {
  return row_op("scale_norm", ShaderId::ScaleNorm, x, &g, nullptr, eps);
}

DTensor VulkanBackend::rms_norm(const DTensor& x, const DTensor& w, float eps) {
  return row_op("rms_norm", ShaderId::RmsNorm, x, &w, nullptr, eps);
}

DTensor VulkanBackend::mul(const DTensor& a, const DTensor& b) {
  return elementwise("mul", ShaderId::Mul, a, &b, 0.0f, 0);
}

DTensor VulkanBackend::row_normalize(const DTensor& x, float eps) {
  return row_op("row_normalize", ShaderId::RowNormalize, x, nullptr, nullptr, eps);
}

// ---- linear and embedding ------------------------------------------------------------

DTensor VulkanBackend::linear(const DTensor& x, const DTensor& w, const DTensor& b) {
  if (const VkTensorStorage* p = packed_of(w, "linear", "weight")) return linear_packed(x, w, *p, b);
  const GpuBuffer& bx = buf(x, "linear", "input");
  const GpuBuffer& bw = buf(w, "linear", "weight");
  if (w.shape.size() != 2) fail("linear", "weight must be 2-D, got " + shape_str(w.shape));
  const int64_t in = w.shape[1], out = w.shape[0];
  if (last_dim(x) != in)
    fail("linear", "input " + shape_str(x.shape) + " does not match weight " + shape_str(w.shape));
  const GpuBuffer* bb = b ? &buf(b, "linear", "bias") : nullptr;
  if (b && b.numel() != out)
    fail("linear", "bias " + shape_str(b.shape) + " for " + std::to_string(out) + " outputs");
  const uint64_t m = in > 0 ? static_cast<uint64_t>(x.numel() / in)
                            : static_cast<uint64_t>(x.shape.size() > 1 ? x.shape[0] : 1);
  const uint64_t K = static_cast<uint64_t>(in), N = static_cast<uint64_t>(out);
  const uint64_t per = std::min<uint64_t>(rows_per_window(std::max(K, N)), 65535ull * 64);
  if (!fits(N * K) || !fits(N) || per == 0 || !fits_u32(m * K) || !fits_u32(m * N)) {
    note_fallback("linear: weight " + shape_str(w.shape) + " or input " + shape_str(x.shape) +
                  " exceeds the device's storage-buffer range (" +
                  mib(ctx_->max_binding_bytes) + "); ran on the CPU backend");
    return from_cpu(cpu().linear(to_cpu(x), to_cpu(w), to_cpu(b)));
  }
  DTensor y = make({static_cast<int64_t>(m), out});
  if (m == 0 || N == 0) return y;
  const GpuBuffer& by = buf(y, "linear", "output");
  const GpuBuffer& bias = bb ? *bb : *dummy_;
  const Pipeline& p = pipes_->get(ShaderId::Linear);
  rec_->access({&bx, &bw, &bias}, {&by});
  for (uint64_t r0 = 0; r0 < m; r0 += per) {
    const uint64_t cnt = std::min(per, m - r0);
    const Window wx = window(bx, r0 * K, cnt * K), wy = window(by, r0 * N, cnt * N);
    const LinearPC pc{u32(r0), u32(cnt), u32(N), u32(K), wx.base, wy.base, bb ? 1u : 0u};
    rec_->dispatch(p, {wx.binding, whole(bw, N * K), whole(bias, bb ? N : 1), wy.binding}, pc,
                   u32((N + 63) / 64), u32((cnt + 63) / 64));
  }
  return y;
}

DTensor VulkanBackend::embedding(const DTensor& table, const std::vector<int32_t>& ids,
                                 float s) {
  if (const VkTensorStorage* p = packed_of(table, "embedding", "table"))
    return embedding_packed(table, *p, ids, s);
  const GpuBuffer& bt = buf(table, "embedding", "table");
  if (table.shape.size() != 2) fail("embedding", "table must be 2-D, got " + shape_str(table.shape));
  const int64_t vocab = table.shape[0], d = table.shape[1];
  for (int32_t id : ids)
    if (id < 0 || id >= vocab)
      fail("embedding", "token id " + std::to_string(id) + " outside vocab of " +
                            std::to_string(vocab));
  const uint64_t L = ids.size(), D = static_cast<uint64_t>(d);
  const uint64_t per = rows_per_window(D);
  if (!fits(static_cast<uint64_t>(table.numel())) || !fits(L) || per == 0 || !fits_u32(L * D)) {
    note_fallback("embedding: table " + shape_str(table.shape) +
                  " exceeds the device's storage-buffer range (" + mib(ctx_->max_binding_bytes) +
                  "); ran on the CPU backend");
    return from_cpu(cpu().embedding(to_cpu(table), ids, s));
  }
  DTensor y = make({static_cast<int64_t>(L), d});
  if (L == 0 || D == 0) return y;
  const GpuBuffer& by = buf(y, "embedding", "output");
  auto bids = upload_bytes(ids.data(), L * 4);
  const Pipeline& p = pipes_->get(ShaderId::Embedding);
  rec_->access({&bt, bids.get()}, {&by});
  for (uint64_t r0 = 0; r0 < L; r0 += per) {
    const uint64_t cnt = std::min(per, L - r0);
    const Window wy = window(by, r0 * D, cnt * D);
    const EmbeddingPC pc{u32(r0), u32(cnt), u32(D), u32(vocab), wy.base, s};
    rec_->dispatch(p, {whole(bt, vocab * D), whole(*bids, L), wy.binding}, pc,
                   u32(std::min<uint64_t>(cnt, 65535)));
  }
  return y;
}

}  // namespace vk

// ---- public API ------------------------------------------------------------------------

std::unique_ptr<Backend> make_vulkan_backend(const VulkanOptions& options) {
  return std::make_unique<vk::VulkanBackend>(options);
}

VulkanBackendStats vulkan_backend_stats(const Backend& backend) {
  auto* vb = dynamic_cast<const vk::VulkanBackend*>(&backend);
  if (!vb) throw AtlasError("backend '" + backend.name() + "' is not a Vulkan backend");
  return vb->stats();
}

}  // namespace atlas
