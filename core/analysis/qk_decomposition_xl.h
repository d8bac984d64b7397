#pragma once
// The QK decomposition of a Transformer-XL head (qk_decomposition_xl.cpp), called by
// qk_decomposition() (qk_decomposition.h) once the request is checked. Its terms (Dai et al.
// 2019, section 3.3) become named rows and a column:
//   (a) content query parts x content key parts      E_xi^T W_q^T W_k,E E_xj
//   (b) content query parts x "xl.relative_position" E_xi^T W_q^T W_k,R R_{i-j}
//   (c) row "xl.u (global content bias)" x content key parts      u^T W_k,E E_xj
//   (d) row "xl.v (global position bias)" x "xl.relative_position" v^T W_k,R R_{i-j}
// Formulas and conventions: docs/causal.md.
#include <string>
#include <vector>

#include "core/analysis/qk_decomposition.h"

namespace atlas {

// Why a Transformer-XL model cannot be decomposed (GTrXL's gates), or "".
std::string qk_xl_refusal(const ModelConfig& c);

// The decomposition of an XL model's head (request already checked against the input's length).
QkDecomposition qk_decomposition_xl(const Model& model, const std::vector<TokenInfo>& source,
                                    const QkRequest& request, RunOptions options);

}  // namespace atlas
