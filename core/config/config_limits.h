#pragma once
// The largest model this tool builds, as validate_config enforces it (core/config/config.cpp).
// Readers of other files whose integers index a model's parts (a corpus manifest's layer and
// head numbers, ...) check them against these before anything is sized by them.
#include <cstdint>

namespace atlas {

constexpr int64_t kMaxDModel = 65536, kMaxDff = 65536, kMaxHeads = 1024, kMaxLayers = 1024;
constexpr int64_t kMaxVocab = 10'000'000, kMaxPositions = 1'048'576;
constexpr int64_t kMaxUniversalSteps = 1024;  // universal.max_steps

}  // namespace atlas
