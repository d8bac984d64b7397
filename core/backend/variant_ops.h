#pragma once
// Which variant ops (core/backend/backend.h, Op::LshAttention ...; module ops say themselves
// which configs use them, module_op.h) a model's forward pass calls, so
// `atlas info` can say before any run which of them a backend computes on the host.
#include <vector>

#include "core/backend/backend.h"
#include "core/config/config.h"

namespace atlas {

// The variant ops a forward of `c` computes, in the order the forward meets them; empty for
// a vanilla model.
std::vector<Op> variant_ops(const ModelConfig& c);

// host_fallback_line() of every op in variant_ops(c) that `backend` does not support, then
// module_fallback_line() of every module op (module_op.h) that `c` uses and `backend` has no
// kernel for.
std::vector<std::string> expected_fallbacks(const ModelConfig& c, const Backend& backend);

}  // namespace atlas
