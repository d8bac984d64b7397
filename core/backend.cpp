#include "backend.h"

#include <atomic>

namespace atlas {

Backend::Backend() {
  static std::atomic<uint64_t> next{1};
  instance_id_ = next++;
}

const char* op_name(Op op) {
  switch (op) {
    case Op::Linear: return "linear";
    case Op::Add: return "add";
    case Op::Scale: return "scale";
    case Op::LayerNorm: return "layer_norm";
    case Op::ScaleNorm: return "scale_norm";
    case Op::Activation: return "activation";
    case Op::Embedding: return "embedding";
    case Op::Attention: return "attention";
    case Op::RowNormalize: return "row_normalize";
  }
  return "?";
}

}  // namespace atlas
