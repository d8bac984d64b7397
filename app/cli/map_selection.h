#pragma once
// The attention map and head a CLI verb draws (atlas export, atlas compare), chosen by
// --stack, --kind, --layer | --step, --segment and --head against a run's catalogue.
#if defined(ATLAS_HAVE_UI)
#include <optional>
#include <string>

#include "app/cli/args.h"
#include "ui/heatmap_data.h"

namespace atlas::cli {

// The selection the flags name; the family defaults to the catalogue's first (production
// order) or the first of --stack/--kind. Throws AtlasError naming the flag when a layer, step,
// segment or head does not exist. Without attention maps: nullopt, or an error when `required`.
// `label` receives the family's label ("decoder self-attention").
std::optional<ui::AttentionSelection> select_attention_map(const Args& args, const Trace& trace, bool required,
                                                           std::string* label = nullptr);

// --head: a number, or mean, max, rollout, flow.
int parse_head_flag(const std::string& s);

}  // namespace atlas::cli
#endif
