#pragma once
// Positions that act on the queries and keys of self-attention instead of being added to the
// embeddings (rotations by position, RoFormer). A variant module brings such a scheme by a file
// qk_positions.cpp in its folder (core/variants/<m>/) defining
//   std::vector<const QkPositionsModule*> atlas::variants::<m>_qk_positions();
// which cmake/module_registry.cmake lists, so the forwards name no scheme. The inference forward
// (forward_pass.cpp) and the training forward (train_model_impl.h) each make one object per
// forward, which caches what it derives per sequence length, and hand it to attention_inputs.h.
#include <memory>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/config/config.h"
#include "core/tensor/tensor.h"

namespace atlas {

struct Trace;
namespace train {
template <class S>
class Tape;
}

class QkPositions {
 public:
  virtual ~QkPositions() = default;
  // x [n, heads * d_head]: the rows of positions first, ..., first + n - 1 of a run whose
  // positions end there (a length-dependent scaling sees first + n), on the inference backend.
  virtual DTensor apply(Backend& be, const DTensor& x, int heads, int64_t first) = 0;
  // The same on a training tape (node ids), positions 0, ..., rows - 1.
  virtual int apply(train::Tape<float>& t, int x, int heads) = 0;
  virtual int apply(train::Tape<double>& t, int x, int heads) = 0;
  // Adds what a view shows of positions first, ..., first + length - 1 under `name` and names
  // derived from it (model_arrays.h), in place of the embeddings' positional encoding.
  virtual void trace(Trace& trace, const std::string& name, int64_t first, int64_t length) = 0;
};

struct QkPositionsModule {
  const char* name;                       // the config's "positional" value
  bool (*used_by)(const ModelConfig& c);  // whether a config's self-attention uses it
  std::unique_ptr<QkPositions> (*make)(const ModelConfig& c);
  // `atlas info`'s "positions:" line for a config that uses it.
  std::string (*describe)(const ModelConfig& c);
};

// The scheme a config's self-attention applies to q and k, or nullptr (positions added to the
// embeddings, or none).
const QkPositionsModule* qk_positions_module(const ModelConfig& c);
// A fresh object of that scheme for one forward, or nullptr.
std::unique_ptr<QkPositions> make_qk_positions(const ModelConfig& c);

// Every module's scheme (generated from the folders of core/variants/).
std::vector<const QkPositionsModule*> generated_variant_qk_positions();

}  // namespace atlas
