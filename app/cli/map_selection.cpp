// Attention map selection from CLI flags (map_selection.h).
#include "app/cli/map_selection.h"

#if defined(ATLAS_HAVE_UI)
#include <algorithm>

#include "core/tensor/error.h"

namespace atlas::cli {

int parse_head_flag(const std::string& s, int heads, const std::string& what, const std::vector<std::string>& names) {
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
  if (std::find(names.begin(), names.end(), s) != names.end())
    return s == "mean" ? ui::HeadMean : s == "max" ? ui::HeadMax : s == "rollout" ? ui::HeadRollout : ui::HeadFlow;
  if (s.empty() || s.find_first_not_of("-0123456789") != std::string::npos)
    throw AtlasError("--head '" + printable(s, 80) + "' is not a head number" + (list.empty() ? "" : " or one of " + list));
  return static_cast<int>(check_index(parse_index_arg("--head", s), 0, heads - 1, what, list.empty() ? "" : "or " + list));
}

void check_index_syntax(const Args& args) {
  for (const char* key : {"--layer", "--step", "--segment"}) (void)args.get_index(key);
  if (auto head = args.get("--head")) {
    static const std::vector<std::string> names = {"mean", "max", "rollout", "flow"};
    if (std::find(names.begin(), names.end(), *head) == names.end() &&
        (head->empty() || head->find_first_not_of("-0123456789") != std::string::npos))
      throw AtlasError("--head '" + printable(*head, 80) + "' is not a head number or one of mean, max, rollout, flow");
  }
}

std::optional<ui::AttentionSelection> select_attention_map(const Args& args, const Trace& trace, bool required,
                                                           std::string* label) {
  // Default family: the catalogue's first (production order), or the first of the requested stack.
  const auto families = ui::attentionFamilies(trace);
  const std::string stack = args.get_or("--stack", "");
  const std::string kind = args.get_or("--kind", "");
  const ui::AttentionFamily* chosen = nullptr;
  for (const auto& f : families)
    if ((stack.empty() || f.stack.toStdString() == stack) && (kind.empty() || f.kind.toStdString() == kind)) {
      chosen = &f;
      break;
    }
  if (!chosen && !required) return std::nullopt;
  if (!chosen) {
    std::string have;
    for (const auto& f : families) have += (have.empty() ? "" : ", ") + f.stack.toStdString() + "/" + f.kind.toStdString();
    throw AtlasError("this model records no " + (stack.empty() ? std::string("") : stack + " ") +
                     (kind.empty() ? std::string("") : kind + " ") + "attention (it has: " +
                     (have.empty() ? "none" : have) + ")");
  }
  const std::string family = chosen->label().toStdString();
  ui::AttentionSelection sel;
  sel.stack = chosen->stack;
  sel.kind = chosen->kind;
  // Every index is checked against this run's family, naming the valid range.
  const std::string has = "the " + family + " has ";
  if (auto step = args.get_index("--step")) {
    if (!chosen->steps)
      throw AtlasError("--step is for Universal Transformer models; the " + family + " has layers (use --layer)");
    if (args.has("--layer")) throw AtlasError("give --layer or --step, not both (--step N is --layer N-1)");
    sel.layer = static_cast<int>(check_index(*step, 1, chosen->layers, has + std::to_string(chosen->layers) + " steps")) - 1;
  } else if (auto layer = args.get_index("--layer")) {
    sel.layer = static_cast<int>(check_index(*layer, 0, chosen->layers - 1, has + std::to_string(chosen->layers) + " layers"));
  } else {
    // Rollout and flow run through layers 0..L: without --layer, the last (the whole model).
    const bool rollout = args.get_or("--head", "") == "rollout" || args.get_or("--head", "") == "flow";
    sel.layer = rollout ? chosen->layers - 1 : 0;
  }
  if (auto segment = args.get_index("--segment")) {
    if (chosen->segments == 0)
      throw AtlasError("--segment is for Transformer-XL models; the " + family + " has no segments");
    sel.segment = static_cast<int>(check_index(*segment, 0, chosen->segments - 1,
                                               "this run has " + std::to_string(chosen->segments) + " segments of " +
                                                   family + ", one per xl.segment_length tokens"));
  }
  sel.head = parse_head_flag(args.get_or("--head", "0"), chosen->heads, has + std::to_string(chosen->heads) + " heads",
                             {"mean", "max", "rollout", "flow"});
  if (label) *label = chosen->label().toStdString();
  return sel;
}

}  // namespace atlas::cli
#endif
