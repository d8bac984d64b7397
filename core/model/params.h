#pragma once
// The named parameter store (name -> tensor) and the list of parameters a config implies.
// Tensor names are documented in docs/model-format.md.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/model/load_monitor.h"
#include "core/tensor/tensor.h"

namespace atlas {

using ParamStore = std::map<std::string, Tensor>;

enum class InitKind { Normal, Zeros, Ones, Constant };

struct ParamSpec {
  std::string name;
  Shape shape;
  InitKind init = InitKind::Normal;
  float value = 0.0f;  // Constant init (ScaleNorm's g = sqrt(d))
};

// Every parameter the config needs, in a stable order.
std::vector<ParamSpec> param_specs(const ModelConfig& config);
int64_t parameter_count(const ModelConfig& config);

// Deterministic initialisation: the same config and seed give bit-identical weights on every
// machine (own generator, not std::normal_distribution, whose output is library-defined).
ParamStore init_params(const ModelConfig& config, uint64_t seed);

// The parameter `name` of a store the engine built or checked (a missing one is a bug, not bad
// input: check_param_shapes has refused a file without it).
const Tensor& required_param(const ParamStore& params, const std::string& name);

// Checks names and shapes against the config; `origin` names the file in messages.
// Missing, unexpected and mis-shaped tensors are errors. Loaders call this; the values are
// scanned once, by the Model that takes the store (check_params).
void check_param_shapes(const ModelConfig& config, const ParamStore& params,
                        const std::string& origin);

// check_param_shapes, then non-finite values returned as warnings (one line per tensor). The scan
// reads every weight's pages (a quantized matrix: its block scales), which is most of opening a
// big file; `monitor` (may be null) hears of it tensor by tensor and may cancel it.
std::vector<std::string> check_params(const ModelConfig& config, const ParamStore& params,
                                      const std::string& origin, const LoadMonitor* monitor = nullptr);

}  // namespace atlas
