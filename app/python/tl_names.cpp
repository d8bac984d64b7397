#include "app/python/tl_names.h"

#include <algorithm>
#include <regex>

#include "core/tensor/error.h"

namespace atlas::python {

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// blocks.{l}.<rest> -> (l, rest)
std::optional<std::pair<int64_t, std::string>> block_name(const std::string& name) {
  static const std::regex kBlock(R"(^blocks\.(\d{1,6})\.(.+)$)");
  std::smatch m;
  if (!std::regex_match(name, m, kBlock)) return std::nullopt;
  return std::make_pair(std::stoll(m[1].str()), m[2].str());
}

void check_layer(const std::string& name, int64_t l, const SingleStack& s) {
  if (l >= s.layers)
    throw AtlasError(name + ": the model has " + std::to_string(s.layers) + " layers (blocks.0 to blocks." +
                     std::to_string(s.layers - 1) + ")");
}

const char* kTraceSuffixes[] = {"attn.hook_pattern", "attn.hook_attn_scores", "attn.hook_q",
                                "attn.hook_k", "hook_resid_pre", "hook_resid_post"};

}  // namespace

std::optional<SingleStack> single_stack(const Model& model) {
  const ModelConfig& c = model.config();
  if (c.architecture == Architecture::EncoderDecoder) return std::nullopt;
  SingleStack s;
  s.stack = c.architecture == Architecture::Encoder ? "encoder" : "decoder";
  const std::string first = s.stack + ".layer0.";
  for (const auto& [name, t] : model.params())
    if (name.rfind(first, 0) == 0 && ends_with(name, ".wo")) {
      s.attention = name.substr(first.size(), name.size() - first.size() - 3);
      break;
    }
  if (s.attention.empty() || s.attention.find('.') != std::string::npos) return std::nullopt;
  s.layers = c.n_layers;
  s.heads = c.n_heads;
  s.kv_heads = c.kv_heads();
  s.d_head = c.d_head();
  return s;
}

std::optional<TraceAlias> tl_trace_alias(const std::string& name, const std::optional<SingleStack>& s) {
  if (name == "hook_pos_embed") return TraceAlias{"positional", {}, ""};
  const auto block = block_name(name);
  if (!block) return std::nullopt;
  const auto& [l, rest] = *block;
  if (std::find(std::begin(kTraceSuffixes), std::end(kTraceSuffixes), rest) == std::end(kTraceSuffixes))
    return std::nullopt;
  if (!s)
    throw AtlasError(name + ": TransformerLens's blocks.{l} names the layers of a model with one stack; "
                     "this model's arrays go by their Atlas names (Trace.names())");
  check_layer(name, l, *s);
  const std::string attn = s->attention_of(l);
  if (rest == "attn.hook_pattern") return TraceAlias{attn, {}, ""};
  if (rest == "attn.hook_attn_scores") return TraceAlias{attn + ".scores", {}, "scores=True"};
  if (rest == "attn.hook_q") return TraceAlias{attn + ".q", {-1, s->heads, s->d_head}, "qk=True"};
  if (rest == "attn.hook_k") return TraceAlias{attn + ".k", {-1, s->kv_heads, s->d_head}, "qk=True"};
  if (rest == "hook_resid_post") return TraceAlias{s->layer(l) + ".hidden", {}, "hidden=True"};
  // hook_resid_pre: the previous layer's output; layer 0's input (the embeddings) is not traced.
  if (l == 0)
    throw AtlasError(name + ": the embeddings entering layer 0 are not traced by Atlas (blocks.{l}.hook_resid_pre "
                     "exists for l >= 1, the output of layer l - 1)");
  return TraceAlias{s->layer(l - 1) + ".hidden", {}, "hidden=True"};
}

std::vector<std::string> tl_trace_aliases(const std::optional<SingleStack>& s,
                                          const std::vector<std::string>& traced) {
  std::vector<std::string> out;
  auto has = [&](const std::string& n) { return std::find(traced.begin(), traced.end(), n) != traced.end(); };
  if (has("positional")) out.push_back("hook_pos_embed");
  if (!s) return out;
  for (int64_t l = 0; l < s->layers; ++l)
    for (const char* suffix : kTraceSuffixes) {
      const std::string alias = "blocks." + std::to_string(l) + "." + suffix;
      if (l == 0 && std::string(suffix) == "hook_resid_pre") continue;
      if (has(tl_trace_alias(alias, s)->array)) out.push_back(alias);
    }
  return out;
}

namespace {

// The norms the stacks hook, by weight prefix: "<stack>.layer<i>.<sub-layer>_norm",
// "<stack>.universal.<sub-layer>_norm" and "<stack>.final_norm" (a LayerNorm's or RMSNorm's
// gamma, a ScaleNorm's g).
std::vector<std::string> stack_norm_names(const Model& model) {
  static const std::regex kNorm(R"(^((encoder|decoder)\.((layer\d+|universal)\.[a-z_]+_norm|final_norm))\.(gamma|g)$)");
  std::vector<std::string> out;
  std::smatch m;
  for (const auto& [name, t] : model.params())
    if (std::regex_match(name, m, kNorm)) out.push_back(m[1].str());
  return out;
}

// The name hook_point gives an alias's norm, checked to exist in this model.
std::string existing_norm(const std::string& alias, const std::string& norm, const Model& model) {
  const std::vector<std::string> norms = stack_norm_names(model);
  if (std::find(norms.begin(), norms.end(), norm) != norms.end()) return norm;
  throw AtlasError(alias + ": " + model.config().name + " has no norm \"" + norm + "\"" +
                   (model.config().norm_position == NormPosition::Post && ends_with(norm, ".final_norm")
                        ? " (a post-norm stack ends with its last layer's feed-forward norm, blocks.{l}.ln2.hook_normalized)"
                        : ""));
}

}  // namespace

std::vector<std::string> hook_names(const Model& model, const std::optional<SingleStack>& s) {
  std::vector<std::string> out;
  for (const auto& [name, t] : model.params()) {
    if (ends_with(name, ".ffn.w2")) out.push_back(name.substr(0, name.size() - 3) + ".out");  // every stack's
    if (!ends_with(name, ".wo")) continue;
    const std::string prefix = name.substr(0, name.size() - 3);
    for (const char* site : {".heads", ".q", ".k", ".v", ".pattern", ".out"}) out.push_back(prefix + site);
  }
  // Layer outputs: the standard stacks' layers (<stack>.layer<i>), which the engine hooks.
  const ModelConfig& c = model.config();
  // Their residual sums and the stacks' inputs, which the standard stacks hook too; the
  // Universal Transformer's shared layer ("<stack>.universal") hooks its sums at every step.
  if (c.has_encoder()) {
    out.push_back("encoder.input");
    for (int64_t l = 0; l < c.n_layers; ++l)
      for (const char* site : {".output", ".resid_mid", ".resid_post"})
        out.push_back("encoder.layer" + std::to_string(l) + site);
  }
  if (c.has_decoder()) {
    out.push_back("decoder.input");
    for (int64_t l = 0; l < c.decoder_layers(); ++l) {
      for (const char* site : {".output", ".resid_mid", ".resid_post"})
        out.push_back("decoder.layer" + std::to_string(l) + site);
      if (c.architecture == Architecture::EncoderDecoder) out.push_back("decoder.layer" + std::to_string(l) + ".resid_mid_cross");
    }
  }
  if (c.universal())
    for (const char* site : {".resid_mid", ".resid_post"})
      out.push_back((c.architecture == Architecture::Decoder ? "decoder" : "encoder") + std::string(".universal") + site);
  for (const std::string& norm : stack_norm_names(model)) {
    out.push_back(norm);
    out.push_back(norm + ".scale");
  }
  if (s && c.norm_position == NormPosition::Pre)
    for (const char* site : {"ln_final.hook_normalized", "ln_final.hook_scale"}) out.push_back(site);
  if (s)
    for (int64_t l = 0; l < s->layers; ++l) {
      const std::string b = "blocks." + std::to_string(l) + ".";
      out.push_back(b + "attn.hook_z");
      out.push_back(b + "attn.hook_q");
      if (s->kv_heads == s->heads) {
        out.push_back(b + "attn.hook_k");
        out.push_back(b + "attn.hook_v");
      }
      out.push_back(b + "attn.hook_pattern");
      out.push_back(b + "hook_resid_post");
      out.push_back(b + "hook_resid_pre");
      out.push_back(b + "hook_attn_out");
      out.push_back(b + "hook_mlp_out");
      out.push_back(b + "hook_resid_mid");
      for (const char* ln : {"ln1.hook_normalized", "ln2.hook_normalized", "ln1.hook_scale", "ln2.hook_scale"})
        out.push_back(b + ln);
    }
  return out;
}

HookPoint hook_point(const std::string& name, const Model& model, const std::optional<SingleStack>& s) {
  if ((name == "ln_final.hook_normalized" || name == "ln_final.hook_scale") && s)
    return {name == "ln_final.hook_scale" ? HookPoint::Kind::NormScale : HookPoint::Kind::Norm,
            existing_norm(name, s->stack + ".final_norm", model), {}};
  if (const auto block = block_name(name); block && s) {
    const auto& [l, rest] = *block;
    static const std::pair<const char*, HookPoint::Kind> kInputs[] = {{"attn.hook_q", HookPoint::Kind::Q},
                                                                      {"attn.hook_k", HookPoint::Kind::K},
                                                                      {"attn.hook_v", HookPoint::Kind::V}};
    for (const auto& [suffix, kind] : kInputs)
      if (rest == suffix) {
        check_layer(name, l, *s);
        if (kind != HookPoint::Kind::Q && s->kv_heads != s->heads)
          throw AtlasError(name + ": this model has grouped-query attention (" + std::to_string(s->kv_heads) +
                           " key/value heads for " + std::to_string(s->heads) +
                           "); Atlas's key and value hooks are per query head, after the repeat: use \"" +
                           s->attention_of(l) + (kind == HookPoint::Kind::K ? ".k" : ".v") + "\" ([L, heads * d_head])");
        return {kind, s->attention_of(l), {s->heads, s->d_head}};
      }
    if (rest == "attn.hook_pattern") {
      check_layer(name, l, *s);
      return {HookPoint::Kind::Pattern, s->attention_of(l), {}};
    }
    if (rest == "attn.hook_z" || rest == "hook_resid_post" || rest == "hook_resid_pre" || rest == "hook_attn_out" ||
        rest == "hook_mlp_out") {
      check_layer(name, l, *s);
      if (rest == "attn.hook_z") return {HookPoint::Kind::Heads, s->attention_of(l), {s->heads, s->d_head}};
      if (rest == "hook_resid_post") return {HookPoint::Kind::LayerOutput, s->layer(l), {}};
      if (rest == "hook_attn_out") return {HookPoint::Kind::SublayerOutput, s->attention_of(l), {}};
      if (rest == "hook_mlp_out") return {HookPoint::Kind::SublayerOutput, s->layer(l) + ".ffn", {}};
      if (l == 0) return {HookPoint::Kind::StackInput, s->stack, {}};  // the embeddings entering layer 0
      return {HookPoint::Kind::LayerOutput, s->layer(l - 1), {}};
    }
    if (rest == "hook_resid_mid") {
      check_layer(name, l, *s);
      return {HookPoint::Kind::Residual, s->attention_of(l), {}};
    }
    if (rest == "ln1.hook_normalized" || rest == "ln2.hook_normalized" || rest == "ln1.hook_scale" ||
        rest == "ln2.hook_scale") {
      check_layer(name, l, *s);
      const std::string norm = s->layer(l) + "." + (rest[2] == '1' ? s->attention : std::string("ffn")) + "_norm";
      return {ends_with(rest, "scale") ? HookPoint::Kind::NormScale : HookPoint::Kind::Norm,
              existing_norm(name, norm, model), {}};
    }
  }
  const std::vector<std::string> names = hook_names(model, s);
  if (std::find(names.begin(), names.end(), name) != names.end()) {
    static const std::pair<const char*, HookPoint::Kind> kSites[] = {
        {".heads", HookPoint::Kind::Heads}, {".q", HookPoint::Kind::Q},       {".k", HookPoint::Kind::K},
        {".v", HookPoint::Kind::V},         {".pattern", HookPoint::Kind::Pattern}, {".output", HookPoint::Kind::LayerOutput},
        {".out", HookPoint::Kind::SublayerOutput}, {".input", HookPoint::Kind::StackInput}};
    for (const auto& [suffix, kind] : kSites)
      if (ends_with(name, suffix)) return {kind, name.substr(0, name.size() - std::string(suffix).size()), {}};
    // Residual sums, named by the layer, hooked by the sub-layer whose addition makes them.
    static const std::pair<const char*, const char*> kSums[] = {
        {".resid_mid_cross", "cross_attn"}, {".resid_mid", ""}, {".resid_post", "ffn"}};
    for (const auto& [suffix, sublayer] : kSums)
      if (ends_with(name, suffix)) {
        const std::string layer = name.substr(0, name.size() - std::string(suffix).size());
        const std::string self = layer.rfind("encoder.", 0) == 0 ? "attn" : "self_attn";  // standard_stacks.h
        return {HookPoint::Kind::Residual, layer + "." + (*sublayer ? std::string(sublayer) : self), {}};
      }
    if (ends_with(name, "_norm")) return {HookPoint::Kind::Norm, name, {}};
    if (ends_with(name, "_norm.scale")) return {HookPoint::Kind::NormScale, name.substr(0, name.size() - 6), {}};
  }
  const std::string near = nearest_name(name, names);
  throw AtlasError("no hook point \"" + name + "\" in " + model.config().name +
                   (near.empty() ? std::string() : " (nearest: \"" + near + "\")") +
                   "; hook points are <attention sub-layer>.heads / .q / .k / .v / .pattern / .out, "
                   "<stack>.layer<i>.output / .ffn.out / .resid_mid / .resid_post, <stack>.input, the norms by their "
                   "weights' names (<stack>.layer<i>.ffn_norm, <stack>.final_norm, ...) and their .scale, the TransformerLens aliases "
                   "blocks.{l}.attn.hook_z / hook_q / hook_k / hook_v / hook_pattern, blocks.{l}.hook_resid_pre / mid / "
                   "post, hook_attn_out, hook_mlp_out, blocks.{l}.ln1 / ln2.hook_normalized / hook_scale, ln_final.hook_*");
}

std::string nearest_name(const std::string& name, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_cost = SIZE_MAX;
  std::vector<size_t> row, next;
  for (const std::string& c : candidates) {  // Levenshtein distance, one row at a time
    row.resize(c.size() + 1);
    next.resize(c.size() + 1);
    for (size_t j = 0; j <= c.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= name.size(); ++i) {
      next[0] = i;
      for (size_t j = 1; j <= c.size(); ++j)
        next[j] = std::min({row[j] + 1, next[j - 1] + 1, row[j - 1] + (name[i - 1] == c[j - 1] ? 0 : 1)});
      std::swap(row, next);
    }
    if (row[c.size()] < best_cost) {
      best_cost = row[c.size()];
      best = c;
    }
  }
  return best;
}

}  // namespace atlas::python
