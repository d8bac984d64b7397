// The differentiable forward (train_model_impl.h) in float.
#include "core/train/train_model_impl.h"

namespace atlas::train {

ATLAS_TRAIN_INSTANTIATE(float)

}  // namespace atlas::train
