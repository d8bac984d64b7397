#include "app/cli/ablation_args.h"

#include <cstdlib>

#include "core/tensor/error.h"

namespace atlas::cli {

AblationSpec ablation_from_args(const Args& a) {
  AblationSpec s;
  if (auto v = a.get("--drop-layers")) s.drop_layers = parse_layer_list(*v, "--drop-layers");
  if (auto v = a.get("--drop-heads")) s.drop_heads = parse_head_list(*v, "--drop-heads");
  if (auto v = a.get("--layerdrop-rate")) {
    char* end = nullptr;
    s.layerdrop_rate = std::strtod(v->c_str(), &end);
    if (v->empty() || *end != '\0' || !(s.layerdrop_rate > 0.0) || s.layerdrop_rate > 1.0)
      throw AtlasError("--layerdrop-rate must be a number in (0, 1], got \"" + *v + "\"");
  }
  return s;
}

}  // namespace atlas::cli
