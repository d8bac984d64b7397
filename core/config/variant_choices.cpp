#include "core/config/variant_choices.h"

#include <algorithm>

#include "core/config/config_json.h"

namespace atlas::config_json {

std::vector<VariantChoice> generated_variant_choices();  // core/variants/<m>/<name>_config.cpp

namespace {

// The rows of the options of core/config (the variants bring theirs from their folders).
std::vector<VariantChoice> config_option_choices() {
  return {
      {"patches", "embeddings.patches",
       [](const ModelConfig& c) { return c.embeddings.patches.enabled(); }, {"variant"},
       {"token_types", "xl", "universal", "lsh", "sparse", "shaw", "performer"},
       "a ViT runs the plain encoder"},
      {"token_types", "embeddings.token_types",
       [](const ModelConfig& c) { return c.embeddings.token_types > 0; }, {}},
      // heads of another width than d_model / n_heads
      {"head_dim", "attention.head_dim",
       [](const ModelConfig& c) {
         return c.attention.head_dim > 0 && c.attention.head_dim * c.n_heads != c.d_model;
       },
       {}, {"@not_plain"}, "heads of another width run in the plain softmax attention only"},
      {"kv_heads", "attention.kv_heads",
       [](const ModelConfig& c) { return c.attention.kv_heads > 0; }, {}, {"@not_plain"},
       "grouped-query heads change the key layout the plain softmax attention sees; these bring "
       "their own"},
      {"sliding_window", "attention.sliding_window",
       [](const ModelConfig& c) { return c.attention.sliding_window > 0; }, {}, {"@not_plain"},
       "the window masks the plain softmax attention; these bring masks of their own"},
      {"gated_ffn", "ffn.gated", [](const ModelConfig& c) { return c.ffn.gated; }, {},
       {"@replacing"}, "these models have no Transformer feed-forward sub-layer"},
      {"head_options", "head.transform / head.bias",
       [](const ModelConfig& c) { return c.head.transform || c.head.bias; }, {},
       {"xl", "universal", "@replacing"},
       "the output head's transform and bias belong to the standard Transformer stacks"},
  };
}

// Every row: the variants' in folder-name order, then core/config's.
const std::vector<VariantChoice>& choices() {
  static const std::vector<VariantChoice> all = [] {
    std::vector<VariantChoice> rows = generated_variant_choices();
    for (VariantChoice& row : config_option_choices()) rows.push_back(std::move(row));
    return rows;
  }();
  return all;
}

const VariantChoice& choice(const std::string& name) {
  for (const VariantChoice& c : choices())
    if (name == c.name) return c;
  throw AtlasError("internal: the compatibility table names an unknown choice " + name);
}

bool in_group(const VariantChoice& c, const std::string& group) {
  return std::any_of(c.groups.begin(), c.groups.end(),
                     [&](const char* g) { return group == g; });
}

// The choices a row's `excludes` names, groups expanded (in table order), without duplicates.
std::vector<const VariantChoice*> excluded_by(const VariantChoice& row) {
  std::vector<const VariantChoice*> out;
  auto add = [&](const VariantChoice* c) {
    if (c != &row && std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  };
  for (const char* name : row.excludes) {
    if (name[0] != '@') {
      add(&choice(name));
      continue;
    }
    bool any = false;
    for (const VariantChoice& c : choices())
      if (in_group(c, name + 1)) add(&c), any = true;
    if (!any)
      throw AtlasError(std::string("internal: the compatibility table names an empty group ") +
                       name);
  }
  return out;
}

[[noreturn]] void refuse_excluded(const VariantChoice& row, const VariantChoice& excluded,
                                  const std::string& origin) {
  fail(origin, std::string(row.key) + " cannot be combined with " + excluded.key + " (" +
                   row.why + ")");
}

// Refuses choices `a` and `b` together with the table's reason (every pair of attention kinds
// is a row of it: the type holds one).
[[noreturn]] void refuse_pair(const std::string& a, const std::string& b,
                              const std::string& origin) {
  for (const VariantChoice& row : choices())
    for (const VariantChoice* excluded : excluded_by(row))
      if ((a == row.name && b == excluded->name) || (b == row.name && a == excluded->name))
        refuse_excluded(row, *excluded, origin);
  throw AtlasError("internal: the compatibility table has no row for " + a + " with " + b);
}

// The first choice the config makes that makes the attention kind other than plain softmax
// ("" for plain softmax attention).
std::string attention_choice(const ModelConfig& c) {
  for (const VariantChoice& row : choices())
    if (in_group(row, "attention") && row.on(c)) return row.name;
  return "";
}

}  // namespace

void choose_attention(ModelConfig& c, AttentionKind kind, const std::string& name,
                      const std::string& origin) {
  if (const std::string chosen = attention_choice(c); !chosen.empty())
    refuse_pair(chosen, name, origin);
  c.attention_kind = std::move(kind);
}

SoftmaxAttention& softmax_attention_for(ModelConfig& c, const std::string& name,
                                        const std::string& origin) {
  if (!c.softmax()) refuse_pair(attention_choice(c), name, origin);
  return *c.softmax();
}

std::vector<std::string> active_variants(const ModelConfig& c) {
  std::vector<std::string> on;
  for (const VariantChoice& row : choices())
    if (in_group(row, "variant") && row.on(c)) on.push_back(row.name);
  return on;
}

void check_compatibility(const ModelConfig& c, const std::string& origin) {
  for (const VariantChoice& row : choices()) {
    if (!row.on(c)) continue;
    for (const VariantChoice* excluded : excluded_by(row))
      if (excluded->on(c)) refuse_excluded(row, *excluded, origin);
  }
}

}  // namespace atlas::config_json
