// The "lsh" config section (see config_json.h): Reformer's LSH attention and its reversible
// stack, read by hand into LshConfig and ReversibleConfig. Keys and defaults are documented in
// docs/variants.md.
#include "core/config/config_json.h"
#include "core/config/field_table.h"

namespace atlas::config_json {
namespace {

// Largest bucket count, chunk length or ff_chunks accepted: far beyond any useful value, small enough that
// products with a length stay inside int64.
constexpr int64_t kMaxLshExtent = int64_t(1) << 30;

const std::vector<std::string> kLshKeys = {"enabled", "n_rounds", "n_buckets", "chunk_length",
                                           "seed", "reversible", "ff_chunks"};

void check_lsh(const LshConfig& l, const std::string& origin) {
  check_range(l.n_rounds, 1, 64, "lsh.n_rounds", origin);
  check_range(l.n_buckets, 0, kMaxLshExtent, "lsh.n_buckets", origin);
  if (l.n_buckets > 1 && l.n_buckets % 2)
    fail(origin,
         "lsh.n_buckets must be even (argmax over [xR; -xR]), 1 (no hashing) or 0 "
         "(auto), got " +
             std::to_string(l.n_buckets));
  check_range(l.chunk_length, 1, kMaxLshExtent, "lsh.chunk_length", origin);
}

// "enabled": true makes LSH the config's attention kind, "reversible": true the reversible
// stack its stack kind; the fields are range-checked either way.
void read_lsh(const Json& o, const Reader& r, ModelConfig& c) {
  check_known_keys(o, kLshKeys, "lsh", r.origin);
  LshConfig l;
  bool enabled = false, reversible = false;
  ReversibleConfig stack;  // the reversible stack kind, chosen by "reversible": true
  for (const auto& item : o.items()) {
    const std::string& k = item.key();
    const Json& v = item.value();
    const std::string key = "lsh." + k;
    if (k == "enabled")
      enabled = r.boolean(v, key);
    else if (k == "n_rounds") l.n_rounds = r.integer(v, key);
    else if (k == "n_buckets") l.n_buckets = r.integer(v, key);
    else if (k == "chunk_length") l.chunk_length = r.integer(v, key);
    else if (k == "seed") l.seed = r.unsigned_integer(v, key);
    else if (k == "reversible") reversible = r.boolean(v, key);
    else if (k == "ff_chunks") stack.ff_chunks = r.integer(v, key);
  }
  check_lsh(l, r.origin);
  check_range(stack.ff_chunks, 1, kMaxLshExtent, "lsh.ff_chunks", r.origin);
  if (enabled) choose_attention(c, l, "lsh", r.origin);
  if (reversible) choose_stack(c, stack, "lsh.reversible", r.origin);
}

OrderedJson write_lsh(const ModelConfig& c) {
  const LshConfig l = c.lsh() ? *c.lsh() : LshConfig{};
  const ReversibleConfig stack = c.reversible() ? *c.reversible() : ReversibleConfig{};
  OrderedJson j;
  j["enabled"] = c.lsh() != nullptr;
  if (!c.lsh() && !c.reversible()) return j;
  j["n_rounds"] = l.n_rounds;
  j["n_buckets"] = l.n_buckets;
  j["chunk_length"] = l.chunk_length;
  j["seed"] = l.seed;
  j["reversible"] = c.reversible() != nullptr;
  j["ff_chunks"] = stack.ff_chunks;
  return j;
}

void validate_lsh(const ModelConfig& c, const std::string& origin) {
  if (const LshConfig* l = c.lsh()) {
    check_lsh(*l, origin);
    if (l->chunk_length > c.max_positions)
      fail(origin, "lsh.chunk_length " + std::to_string(l->chunk_length) +
                       " is longer than the longest sequence (max_positions " +
                       std::to_string(c.max_positions) + ")");
  }
  const ReversibleConfig* reversible = c.reversible();
  if (!reversible) return;
  check_range(reversible->ff_chunks, 1, kMaxLshExtent, "lsh.ff_chunks", origin);
  if (c.norm_position != NormPosition::Pre)
    fail(origin, "lsh.reversible needs \"norm_position\": \"pre\" (a norm after the residual "
                 "sum would make the block non-invertible)");
  if (c.architecture == Architecture::EncoderDecoder)
    fail(origin, "lsh.reversible supports encoder-only and decoder-only models");
}

}  // namespace

namespace variants {

std::vector<ConfigSection> reformer_sections() {
  return {{"lsh", read_lsh, write_lsh, validate_lsh}};
}

// Its rows of the compatibility table (core/config/variant_choices.h).
std::vector<VariantChoice> reformer_choices() {
  return {{"lsh", "lsh.enabled", [](const ModelConfig& c) { return c.lsh() != nullptr; },
           {"attention", "efficient", "not_plain", "variant"}, {"sparse"},
           "each is a different attention sub-layer: pick one"},
          // its recomputed layers keep nothing of their own attention
          {"reversible", "lsh.reversible",
           [](const ModelConfig& c) { return c.reversible() != nullptr; },
           {"efficient", "not_plain", "variant"}}};
}

}  // namespace variants

}  // namespace atlas::config_json
