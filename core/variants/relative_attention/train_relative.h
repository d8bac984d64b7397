#pragma once
// The tape kernel of Shaw's relations and the adaptive span (relative_kernel.h, the
// mechanisms' entries' AttentionKernel, core/model/attention_kernel.h): Shaw's relations (core/variants/shaw/train_shaw.h) or the adaptive span
// (core/variants/adaptive_span/train_span.h), whichever the config's softmax attention has
// (check_trainable refuses the two together). The span's z nodes are recorded for the loop's
// penalty (core/variants/adaptive_span/train_hooks.cpp).
#include <string>

#include "core/config/config.h"
#include "core/train/train_model.h"
#include "core/variants/adaptive_span/train_span.h"
#include "core/variants/shaw/train_shaw.h"

namespace atlas::train {

// xq [Lq, d] the sub-layer's input (the dynamic span reads it), q, k, v as Tape::attention;
// weight(name) is a parameter's node.
template <class S, class Weight>
int tape_relative_attention(Tape<S>& t, const ModelConfig& c, const std::string& prefix, int xq,
                            int q, int k, int v, const AttentionSpec<S>& spec, Weight&& weight,
                            ForwardResult<S>& record) {
  if (const AdaptiveSpanConfig* sc = c.adaptive_span()) {
    const int z = span_z_node(t, *sc, prefix, xq, weight);  // [Lq, H] or [1, H]
    record.span_z_nodes.push_back(z);
    return span_attention(t, q, k, v, z, spec,
                          {sc->ramp, sc->max_span, sc->mode, sc->distance_offset()});
  }
  return shaw_attention(t, q, k, v, weight(prefix + ".rel_k"), weight(prefix + ".rel_v"), spec,
                        c.shaw()->max_distance);
}

}  // namespace atlas::train
