#pragma once
// The attention map and head a CLI verb draws (atlas export, atlas compare), chosen by
// --stack, --kind, --layer | --step, --segment and --head against a run's catalogue.
#if defined(ATLAS_HAVE_UI)
#include <optional>
#include <string>
#include <vector>

#include "app/cli/args.h"
#include "ui/views/attention_selection.h"

namespace atlas::cli {

// The selection the flags name; the family defaults to the catalogue's first (production
// order) or the first of --stack/--kind. Throws AtlasError naming the flag and the valid range
// when a layer, step, segment or head does not exist (check_index). Without attention maps:
// nullopt, or an error when `required`. `label` receives the family's label ("decoder self-attention").
std::optional<ui::AttentionSelection> select_attention_map(const Args& args, const Trace& trace, bool required,
                                                           std::string* label = nullptr);

// Refuses now a --layer, --step, --segment or --head that is no integer (nor, for --head, one
// of mean, max, rollout, flow), so a typo does not wait for the run; ranges are checked by
// select_attention_map once the run is in.
void check_index_syntax(const Args& args);

// --head: a number in [0, heads), or one of `names` (of mean, max, rollout, flow: the aggregates
// the caller draws). Throws naming the valid range: "--head 9 is out of range: WHAT (0 to 3, or
// mean, max, rollout, flow)"; a word not in `names` is named as such.
int parse_head_flag(const std::string& s, int heads, const std::string& what, const std::vector<std::string>& names);

}  // namespace atlas::cli
#endif
