#pragma once
// Edits of activations during a forward pass, for interventions such as ablation sweeps
// (core/analysis/ablation_sweep.h) and activation patching. Each hook sees host tensors: on a
// device backend the activation is downloaded, edited and uploaded again, so hooks cost a
// round trip per call and are meant for analysis runs, not the interactive one.
#include <functional>
#include <string>

#include "core/tensor/tensor.h"

namespace atlas {

struct ActivationHooks {
  // The heads' outputs of an attention sub-layer before the output projection W^O:
  // [Lq, heads * d_head], head h in columns h*d_head .. (h+1)*d_head. `prefix` is the
  // sub-layer's weight prefix ("decoder.layer3.self_attn"). Called for every attention
  // sub-layer of every variant (each Transformer-XL segment, each Universal Transformer step).
  std::function<void(const std::string& prefix, Tensor& heads)> heads;
  // The output [L, d] of one layer of a standard encoder or decoder stack, given the layer's
  // input; `layer` is the layer's weight prefix ("encoder.layer2"). Stacks of their own
  // (Transformer-XL, Universal Transformer, reversible) do not call it.
  std::function<void(const std::string& layer, const Tensor& input, Tensor& output)> layer;

  explicit operator bool() const { return heads || layer; }
};

}  // namespace atlas
