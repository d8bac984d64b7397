#pragma once
// Config of GTrXL's gates, held by a Transformer-XL stack (XLConfig::gating,
// core/variants/transformer_xl/transformer_xl_config.h); the "gating" section, read, written and
// validated by core/variants/gtrxl/gtrxl_config.cpp (keys in docs/variants.md).
#include <string>

namespace atlas {

// GTrXL (Parisotto et al. 2019; seeds 000, 001): on top of Transformer-XL, layer norm on the
// sub-layer input only with a ReLU on the sub-layer output (identity-map reordering, TrXL-I),
// and the residual x + y of both sub-layers replaced by a gate g(x, y) (core/variants/gtrxl/gtrxl.cpp).
enum class GateType { None, Input, Output, Highway, Gru };

struct GatingConfig {
  GateType type = GateType::Gru;     // none = plain residual x + y (TrXL-I with the reordering)
  float bias_init = 2.0f;            // b_g at initialisation (output, highway, GRU); paper: 2
  bool identity_map_reorder = true;  // TrXL-I: needs norm_position "pre"; adds the ReLU
};

struct ModelConfig;

namespace config_json {
// Validates gates on the Transformer-XL stack of `c` (ranges, then the norm position they
// need); the "xl" section's check calls it, as gates set by code live in that stack.
void check_gating(const ModelConfig& c, const GatingConfig& g, const std::string& origin);
}  // namespace config_json

}  // namespace atlas
