// The differentiable forward (train_model_impl.h) in double.
#include "core/train/train_model_impl.h"

namespace atlas::train {

ATLAS_TRAIN_INSTANTIATE(double)

}  // namespace atlas::train
