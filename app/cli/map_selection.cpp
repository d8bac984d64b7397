// Attention map selection from CLI flags (map_selection.h).
#include "app/cli/map_selection.h"

#if defined(ATLAS_HAVE_UI)
#include "core/tensor/error.h"

namespace atlas::cli {

int parse_head_flag(const std::string& s) {
  if (s == "mean") return ui::HeadMean;
  if (s == "max") return ui::HeadMax;
  if (s == "rollout") return ui::HeadRollout;
  if (s == "flow") return ui::HeadFlow;
  try {
    size_t used = 0;
    const int h = std::stoi(s, &used);
    if (used == s.size() && h >= 0) return h;
  } catch (const std::exception&) {
  }
  throw AtlasError("--head '" + s + "' is not a head number or one of mean, max, rollout, flow");
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
  if (args.has("--step")) {
    if (!chosen->steps)
      throw AtlasError("--step is for Universal Transformer models; the " + family + " has layers (use --layer)");
    if (args.has("--layer")) throw AtlasError("give --layer or --step, not both (--step N is --layer N-1)");
    sel.layer = static_cast<int>(args.get_int("--step", 1, 1, chosen->layers)) - 1;
  } else {
    // Rollout and flow run through layers 0..L: without --layer, the last (the whole model).
    const bool rollout = args.get_or("--head", "") == "rollout" || args.get_or("--head", "") == "flow";
    sel.layer = static_cast<int>(
        args.get_int("--layer", rollout ? chosen->layers - 1 : 0, 0, chosen->layers - 1));
  }
  if (args.has("--segment")) {
    if (chosen->segments == 0)
      throw AtlasError("--segment is for Transformer-XL models; the " + family + " has no segments");
    const long long segment = args.get_int("--segment", 0, 0, 1LL << 30);
    if (segment >= chosen->segments)
      throw AtlasError("--segment " + std::to_string(segment) + " does not exist: this run has " +
                       std::to_string(chosen->segments) + " segments of " + family + " (0 to " +
                       std::to_string(chosen->segments - 1) + "; one per xl.segment_length tokens)");
    sel.segment = static_cast<int>(segment);
  }
  sel.head = parse_head_flag(args.get_or("--head", "0"));
  if (sel.head >= chosen->heads)
    throw AtlasError("--head " + std::to_string(sel.head) + " does not exist: the model has " +
                     std::to_string(chosen->heads) + " heads (0 to " + std::to_string(chosen->heads - 1) + ")");
  if (label) *label = chosen->label().toStdString();
  return sel;
}

}  // namespace atlas::cli
#endif
