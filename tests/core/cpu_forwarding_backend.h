#pragma once
// A test backend that is the CPU backend for every op Backend requires of an implementation,
// so a test overrides only what it is about: the ops it claims (supports), what it records
// (upload), the module ops it has kernels for. The optional ops keep Backend's defaults (the
// host references, reported by note_host_compute unless supported).
#include <memory>
#include <string>
#include <vector>

#include "core/backend/backend.h"

namespace atlas::backend_test {

class CpuForwardingBackend : public Backend {
 public:
  std::string name() const override { return "cpu-forwarding"; }
  bool supports(Op) const override { return true; }
  DTensor upload(const Tensor& h) override { return cpu_->upload(h); }
  Tensor download(const DTensor& t) override { return cpu_->download(t); }
  DTensor linear(const DTensor& x, const DTensor& w, const DTensor& b) override {
    return cpu_->linear(x, w, b);
  }
  DTensor add(const DTensor& a, const DTensor& b) override { return cpu_->add(a, b); }
  DTensor scale(const DTensor& x, float s) override { return cpu_->scale(x, s); }
  DTensor layer_norm(const DTensor& x, const DTensor& g, const DTensor& b, float eps) override {
    return cpu_->layer_norm(x, g, b, eps);
  }
  DTensor scale_norm(const DTensor& x, const DTensor& g, float eps) override {
    return cpu_->scale_norm(x, g, eps);
  }
  DTensor row_normalize(const DTensor& x, float eps) override {
    return cpu_->row_normalize(x, eps);
  }
  DTensor activation(const DTensor& x, Activation k) override { return cpu_->activation(x, k); }
  DTensor embedding(const DTensor& t, const std::vector<int32_t>& ids, float s) override {
    return cpu_->embedding(t, ids, s);
  }
  AttentionResult attention(const DTensor& q, const DTensor& k, const DTensor& v,
                            const AttentionArgs& a) override {
    return cpu_->attention(q, k, v, a);
  }

 protected:
  std::unique_ptr<Backend> cpu_ = make_cpu_backend();
};

}  // namespace atlas::backend_test
