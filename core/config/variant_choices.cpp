#include "core/config/variant_choices.h"

#include <algorithm>

#include "core/config/config_json.h"

namespace atlas::config_json {

namespace {

// A choice a config can make that some other choice excludes: its name in the table, the
// config key a message names it by, and whether this config makes it.
struct Choice {
  const char* name;
  const char* key;
  bool (*on)(const ModelConfig&);
};

const Choice kChoices[] = {
    {"shaw", "shaw.enabled", [](const ModelConfig& c) { return c.shaw() != nullptr; }},
    {"adaptive_span", "adaptive_span.enabled",
     [](const ModelConfig& c) { return c.adaptive_span() != nullptr; }},
    {"xl", "xl.enabled", [](const ModelConfig& c) { return c.xl() != nullptr; }},
    {"universal", "universal.enabled",
     [](const ModelConfig& c) { return c.universal() != nullptr; }},
    {"lsh", "lsh.enabled", [](const ModelConfig& c) { return c.lsh() != nullptr; }},
    {"reversible", "lsh.reversible",
     [](const ModelConfig& c) { return c.reversible() != nullptr; }},
    {"performer", "performer.enabled",
     [](const ModelConfig& c) { return c.performer() != nullptr; }},
    {"sparse", "sparse.pattern", [](const ModelConfig& c) { return c.sparse() != nullptr; }},
    {"score_function", "score.function", [](const ModelConfig& c) { return c.score() != nullptr; }},
    {"rnn_seq2seq", "rnn_seq2seq.enabled",
     [](const ModelConfig& c) { return c.rnn_seq2seq() != nullptr; }},
    {"ntm", "ntm.enabled", [](const ModelConfig& c) { return c.ntm() != nullptr; }},
    {"sagan", "sagan.enabled", [](const ModelConfig& c) { return c.sagan() != nullptr; }},
    {"snail", "snail.enabled", [](const ModelConfig& c) { return c.snail() != nullptr; }},
    {"patches", "embeddings.patches",
     [](const ModelConfig& c) { return c.embeddings.patches.enabled(); }},
    {"token_types", "embeddings.token_types",
     [](const ModelConfig& c) { return c.embeddings.token_types > 0; }},
    {"rotary", "positional \"rotary\"",
     [](const ModelConfig& c) { return c.positional == Positional::Rotary; }},
    // heads of another width than d_model / n_heads
    {"head_dim", "attention.head_dim",
     [](const ModelConfig& c) {
       return c.attention.head_dim > 0 && c.attention.head_dim * c.n_heads != c.d_model;
     }},
    {"kv_heads", "attention.kv_heads",
     [](const ModelConfig& c) { return c.attention.kv_heads > 0; }},
    {"sliding_window", "attention.sliding_window",
     [](const ModelConfig& c) { return c.attention.sliding_window > 0; }},
    {"gated_ffn", "ffn.gated", [](const ModelConfig& c) { return c.ffn.gated; }},
    {"head_options", "head.transform / head.bias",
     [](const ModelConfig& c) { return c.head.transform || c.head.bias; }},
};

// The compatibility table: a row's choice cannot be combined with any choice it lists, for the
// reason given. A pair is listed once (in the row of the choice that brings the restriction).
using Names = std::vector<const char*>;
struct Exclusion {
  const char* choice;
  Names excludes;
  const char* why;
};

Names operator+(Names a, const Names& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
// Every attention variant that replaces the softmax attention sub-layer's scores or pattern,
// and the reversible stack (its recomputed layers keep nothing of their own attention).
const Names kEfficient = {"sparse", "lsh", "reversible", "performer"};
// The models that replace the Transformer stacks altogether.
const Names kReplacing = {"rnn_seq2seq", "ntm", "sagan", "snail"};
// What plain softmax attention with a standard key layout and mask excludes.
const Names kNotPlain = Names{"shaw", "adaptive_span", "xl", "universal"} + kEfficient +
                        Names{"score_function"} + kReplacing;

const std::vector<Exclusion> kExclusions = {
    {"shaw", kEfficient,
     "sparse, LSH and Performer attention take over the sub-layer Shaw's relative positions live in"},
    {"adaptive_span", kEfficient,
     "sparse, LSH and Performer attention take over the sub-layer the span mask lives in"},
    {"universal", Names{"shaw", "adaptive_span"} + kEfficient,
     "the Universal Transformer's shared block runs plain softmax attention"},
    {"xl", Names{"shaw", "adaptive_span"} + kEfficient,
     "Transformer-XL's attention has relative positions and memory of its own"},
    {"lsh", {"sparse"}, "each is a different attention sub-layer: pick one"},
    {"performer", {"sparse", "lsh"}, "each is a different attention sub-layer: pick one"},
    {"score_function", Names{"shaw", "adaptive_span", "xl"} + kEfficient,
     "they compute their own scores; use \"scaled_dot\""},
    {"rnn_seq2seq", Names{"shaw", "adaptive_span"} + kEfficient, "it replaces the Transformer stacks"},
    {"ntm", Names{"shaw", "adaptive_span"} + kEfficient, "it replaces the Transformer stack"},
    {"sagan", Names{"shaw", "adaptive_span"} + kEfficient, "it replaces the Transformer stack"},
    {"snail", Names{"shaw", "adaptive_span"} + kEfficient, "it replaces the Transformer stack"},
    {"patches", {"token_types", "xl", "universal", "lsh", "sparse", "shaw", "performer"},
     "a ViT runs the plain encoder"},
    {"rotary", Names{"shaw", "xl", "universal", "lsh", "reversible", "performer", "sparse", "patches"} + kReplacing,
     "Shaw and XL bring relative positions of their own, Universal a position and time signal, "
     "LSH shares q and k; the others are not rotated by the attention sub-layer RoPE hooks into"},
    {"head_dim", kNotPlain,
     "heads of another width run in the plain softmax attention only"},
    {"kv_heads", kNotPlain,
     "grouped-query heads change the key layout the plain softmax attention sees; these bring their own"},
    {"sliding_window", kNotPlain,
     "the window masks the plain softmax attention; these bring masks of their own"},
    {"gated_ffn", kReplacing, "these models have no Transformer feed-forward sub-layer"},
    {"head_options", Names{"xl", "universal"} + kReplacing,
     "the output head's transform and bias belong to the standard Transformer stacks"},
};

const Choice& choice(const std::string& name) {
  for (const Choice& c : kChoices)
    if (name == c.name) return c;
  throw AtlasError("internal: the compatibility table names an unknown choice " + name);
}

[[noreturn]] void refuse_excluded(const Exclusion& row, const char* excluded,
                                  const std::string& origin) {
  fail(origin, std::string(choice(row.choice).key) + " cannot be combined with " +
                   choice(excluded).key + " (" + row.why + ")");
}

// Refuses choices `a` and `b` together with the table's reason (every pair of attention kinds
// is a row of it: the type holds one).
[[noreturn]] void refuse_pair(const std::string& a, const std::string& b,
                              const std::string& origin) {
  for (const Exclusion& row : kExclusions)
    for (const char* excluded : row.excludes)
      if ((a == row.choice && b == excluded) || (b == row.choice && a == excluded))
        refuse_excluded(row, excluded, origin);
  throw AtlasError("internal: the compatibility table has no row for " + a + " with " + b);
}

// The table's choices that make the attention kind (attention_kind.h) other than plain softmax.
const char* const kAttentionChoices[] = {"shaw", "adaptive_span", "sparse",
                                         "lsh",  "performer",     "score_function"};

// The first of them the config makes ("" for plain softmax attention).
std::string attention_choice(const ModelConfig& c) {
  for (const char* name : kAttentionChoices)
    if (choice(name).on(c)) return name;
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
  // The variants among the table's choices; reversible layers count as "lsh".
  const char* const variants[] = {"shaw",   "adaptive_span", "xl",  "universal",      "lsh",
                                  "performer", "sparse",     "score_function", "rnn_seq2seq",
                                  "ntm",    "sagan",         "snail", "patches"};
  std::vector<std::string> on;
  for (const char* name : variants) {
    const bool chosen = choice(name).on(c) || (std::string(name) == "lsh" && choice("reversible").on(c));
    if (chosen) on.push_back(name);
  }
  return on;
}

void check_compatibility(const ModelConfig& c, const std::string& origin) {
  for (const Exclusion& row : kExclusions) {
    const Choice& a = choice(row.choice);
    if (!a.on(c)) continue;
    for (const char* excluded : row.excludes) {
      const Choice& b = choice(excluded);
      if (b.on(c)) refuse_excluded(row, excluded, origin);
    }
  }
}

}  // namespace atlas::config_json
