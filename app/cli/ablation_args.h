#pragma once
// The ablation flags shared by atlas run and atlas export --panel ablation:
// --drop-layers L,... / --layerdrop-rate P / --drop-heads L:H,... (core/analysis/ablation.h).
#include "app/cli/args.h"
#include "core/analysis/ablation.h"

namespace atlas::cli {

// The spec the flags give (empty when none is given); throws AtlasError naming a bad value.
AblationSpec ablation_from_args(const Args& a);

}  // namespace atlas::cli
