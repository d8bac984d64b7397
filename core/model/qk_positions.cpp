#include "core/model/qk_positions.h"

namespace atlas {

const QkPositionsModule* qk_positions_module(const ModelConfig& c) {
  static const std::vector<const QkPositionsModule*> modules = generated_variant_qk_positions();
  for (const QkPositionsModule* m : modules)
    if (m->used_by(c)) return m;
  return nullptr;
}

std::unique_ptr<QkPositions> make_qk_positions(const ModelConfig& c) {
  const QkPositionsModule* m = qk_positions_module(c);
  return m ? m->make(c) : nullptr;
}

}  // namespace atlas
