#pragma once
// A mechanism's kernels: what computes the heads' outputs of an attention sub-layer from its
// q, k, v, on the inference backend and on the training tape (float and double). A mechanism's
// registry entry (core/model/mechanism_module.h, `kernel`) points to one; the one rule of
// attention_mechanism.h says which entry's kernel a sub-layer runs, and attention_sublayer.h
// calls it through its executor, so neither executor names a mechanism. A sub-layer no entry
// claims runs the executors' own softmax kernel.
//
// What a kernel gets of its executor is the call below: on the backend the ForwardPass (its
// backend, weights, options and trace: forward_pass.h), on the tape the tape, the config, the
// parameters and the record of module nodes; attention dropout's multipliers come in the spec,
// and DropHead is applied by the executor to every kernel's output.
#include <functional>
#include <string>
#include <type_traits>

#include "core/backend/backend.h"
#include "core/config/config.h"

namespace atlas {

class ForwardPass;
namespace train {
template <class S>
class Tape;
template <class S>
struct AttentionSpec;
template <class S>
struct ForwardResult;
}  // namespace train

// One sub-layer's call of an inference kernel.
struct BackendKernelCall {
  ForwardPass& pass;
  const std::string& prefix;       // its parameters
  const std::string& traced_name;  // its site's array name (attention_array_name)
  const AttentionMask& mask;
  const DTensor& xq;  // the sub-layer's query input [Lq, d] (the dynamic span reads it)
  const DTensor &q, &k, &v;  // [Lq, H*dh], [Lk, H*dh], [Lk, H*dv]
};

// One sub-layer's call of a tape kernel (node ids).
template <class S>
struct TapeKernelCall {
  train::Tape<S>& tape;
  const ModelConfig& config;
  const std::function<int(const std::string&)>& weight;  // a parameter's node
  train::ForwardResult<S>& record;  // nodes the modules' training hooks read
  const std::string& prefix;        // its parameters
  train::AttentionSpec<S>& spec;    // heads, scale, masks, attention dropout (a kernel may take it)
  int xq, q, k, v;
};

struct AttentionKernel {
  DTensor (*backend)(const BackendKernelCall& call) = nullptr;
  int (*tape_float)(const TapeKernelCall<float>& call) = nullptr;
  int (*tape_double)(const TapeKernelCall<double>& call) = nullptr;
  // It computes cross-attention sub-layers too (a score function); else self-attention only.
  bool cross_attention = false;
  // Nothing of size Lq x Lk is formed densely: no dense mask is traced, and its maps are of its
  // entry's sparse_map_kind (CSR patterns, LSH, Performer's implicit maps).
  bool sparse_maps = false;
};

// The kernel's tape function for the scalar S.
template <class S>
int run_tape_kernel(const AttentionKernel& kernel, const TapeKernelCall<S>& call) {
  if constexpr (std::is_same_v<S, float>)
    return kernel.tape_float(call);
  else
    return kernel.tape_double(call);
}

}  // namespace atlas
