// ALiBi (Press, Smith & Lewis 2022) as an attention mechanism (core/model/mechanism_module.h):
// a part of softmax attention whose self-attention sub-layers run alibi_kernel.h. Its maps are
// not computed on demand (the on-demand rows know no biases).
#include <ostream>

#include "core/model/mechanism_module.h"
#include "core/variants/alibi/alibi_kernel.h"
#include "core/variants/alibi/alibi_slopes.h"

namespace atlas {

namespace {

bool alibi_mechanism_used(const ModelConfig& c) { return alibi_of(c) != nullptr; }

// "ALiBi: scores - m_h |i - j|, slopes 2^(-8 h/4): 0.25 0.0625 ..." in `atlas info`.
void describe_alibi(const ModelConfig& c, std::ostream& s) {
  const AlibiConfig& a = *alibi_of(c);
  s << "ALiBi: scores - m_h |i - j|, bias_max " << a.bias_max << ", slopes m_1..m_" << c.n_heads
    << ":";
  for (float m : alibi_slopes(c.n_heads, a.bias_max)) s << " " << m;
  s << "\n";
}

const AttentionMechanismModule kAlibiMechanism{
    .name = "alibi",
    .used_by = alibi_mechanism_used,
    .kernel = &kAlibiKernel,
    .describe = describe_alibi,
    .maps_on_demand = never_on_demand,
};

}  // namespace

namespace variants {
std::vector<const AttentionMechanismModule*> alibi_mechanisms() { return {&kAlibiMechanism}; }
}  // namespace variants

}  // namespace atlas
