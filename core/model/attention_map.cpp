#include "core/model/attention_map.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>

#include "core/model/array_name_parts.h"
#include "core/model/trace.h"

namespace atlas {

std::string attention_array_name(const AttentionMap& m) {
  std::string s = m.stack;
  if (m.segment >= 0) s += ".seg" + std::to_string(m.segment);
  if (m.step >= 0) return s + ".step" + std::to_string(m.step) + "." + m.sublayer;
  return s + ".layer" + std::to_string(m.layer) + "." + m.sublayer;
}

namespace {

// The naming scheme of a map's companions (docs/dump-format.md): the only place the suffixes are
// written. Dumps of versions 1 and 2 name the arrays this way, so these never change.
struct CompanionName {
  Companion companion;
  const char* suffix;
  std::string AttentionCompanions::*field;
};

constexpr CompanionName kCompanionNames[] = {
    {Companion::Indptr, ".indptr", &AttentionCompanions::indptr},
    {Companion::Indices, ".indices", &AttentionCompanions::indices},
    {Companion::Values, ".values", &AttentionCompanions::values},
    {Companion::Allowed, ".allowed", &AttentionCompanions::allowed},
    {Companion::Mask, ".mask", &AttentionCompanions::mask},
    {Companion::Scores, ".scores", &AttentionCompanions::scores},
    {Companion::Queries, ".q", &AttentionCompanions::q},
    {Companion::Keys, ".k", &AttentionCompanions::k},
    {Companion::KeyValid, ".key_valid", &AttentionCompanions::key_valid},
    {Companion::ValueNorms, ".value_norms", &AttentionCompanions::value_norms},
};

bool ends_with_suffix(const std::string& name, const std::string& suffix) {
  return name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::string companion_array_name(const std::string& array, Companion c) {
  for (const CompanionName& n : kCompanionNames)
    if (n.companion == c) return array + n.suffix;
  return array;  // unreachable: every Companion has a suffix above
}

std::optional<std::pair<std::string, Companion>> companion_of(const std::string& name) {
  for (const CompanionName& n : kCompanionNames) {
    const std::string suffix = n.suffix;
    if (ends_with_suffix(name, suffix)) return std::pair{name.substr(0, name.size() - suffix.size()), n.companion};
  }
  return std::nullopt;
}

AttentionCompanions traced_companions(const Trace& trace, const std::string& array) {
  AttentionCompanions out;
  for (const CompanionName& n : kCompanionNames) {
    const std::string name = array + n.suffix;
    if (trace.find(name)) out.*n.field = name;
  }
  return out;
}

const char* attention_map_kind_name(AttentionMapKind kind) {
  switch (kind) {
    case AttentionMapKind::Self: return "self";
    case AttentionMapKind::Cross: return "cross";
    case AttentionMapKind::Memory: return "memory";
    case AttentionMapKind::Implicit: return "implicit";
    case AttentionMapKind::Sparse: return "sparse";
  }
  return "self";
}

const char* token_side_name(TokenSide side) {
  switch (side) {
    case TokenSide::Source: return "source";
    case TokenSide::Target: return "target";
    case TokenSide::Positions: return "positions";
  }
  return "source";
}

std::string attention_family_label(const AttentionMap& m) {
  return m.stack + (m.sublayer == "cross_attn" ? " cross-attention" : " self-attention");
}

std::string attention_map_title(const AttentionMap& m) {
  std::string s = attention_family_label(m);
  if (m.segment >= 0) s += ", segment " + std::to_string(m.segment);
  if (m.step >= 0)
    s += ", step " + std::to_string(m.step);
  else
    s += ", layer " + std::to_string(m.layer);
  if (m.round >= 0) s += ", round " + std::to_string(m.round);
  if (m.memory_keys > 0)
    s += " (keys: " + std::to_string(m.memory_keys) + " memory + " +
         std::to_string(m.keys.count - m.memory_keys) + " segment)";
  return s;
}

namespace {

std::vector<std::string> span_labels(const Trace& trace, const TokenSpan& span) {
  const std::vector<TokenInfo>* list = span.side == TokenSide::Source   ? &trace.source_tokens
                                       : span.side == TokenSide::Target ? &trace.target_tokens
                                                                        : nullptr;
  std::vector<std::string> out;
  out.reserve(size_t(std::max<int64_t>(span.count, 0)));
  for (int64_t i = 0; i < span.count; ++i) {
    const int64_t t = span.begin + i;
    if (list && t >= 0 && t < int64_t(list->size()))
      out.push_back((*list)[size_t(t)].label);
    else
      out.push_back(std::to_string(t));  // positions, or a span outside the list (never shown wrong)
  }
  return out;
}

// "<stack>.layer<i>.<sub>", "<stack>.seg<s>.layer<i>.<sub>", "<stack>.step<n>.<sub>"
struct ParsedName {
  std::string stack, sublayer;
  int64_t layer = 0, segment = -1, step = -1;
};

std::optional<ParsedName> parse_name(const std::string& name) {
  const std::vector<std::string> parts = dotted_parts(name);
  if (parts.size() < 3 || parts.size() > 4) return std::nullopt;
  ParsedName p;
  p.stack = parts[0];
  p.sublayer = parts.back();
  if (p.sublayer != "attn" && p.sublayer != "self_attn" && p.sublayer != "cross_attn")
    return std::nullopt;
  if (parts.size() == 4) {
    const auto seg = number_after(parts[1], "seg");
    if (!seg) return std::nullopt;
    p.segment = *seg;
  }
  const std::string& unit = parts[parts.size() - 2];
  if (const auto l = number_after(unit, "layer")) {
    p.layer = *l;
  } else if (const auto s = number_after(unit, "step")) {
    p.step = *s;
  } else {
    return std::nullopt;
  }
  return p;
}

}  // namespace

bool is_attention_array_name(const std::string& name) { return parse_name(name).has_value(); }

std::vector<std::string> query_labels(const Trace& trace, const AttentionMap& m) {
  return span_labels(trace, m.queries);
}

std::vector<std::string> key_labels(const Trace& trace, const AttentionMap& m) {
  return span_labels(trace, m.keys);
}

std::vector<AttentionMap> derive_attention_maps(const Trace& trace) {
  const bool enc_dec = !trace.target_tokens.empty();
  std::vector<AttentionMap> out;
  std::map<int64_t, int64_t> segment_rows;  // XL: queries of each segment, from its layer 0
  for (const TracedArray& a : trace.arrays) {
    const auto p = parse_name(a.name);
    if (!p || a.tensor.shape.size() != 3) continue;
    AttentionMap m;
    m.array = a.name;
    m.stack = p->stack;
    m.sublayer = p->sublayer;
    m.layer = p->layer;
    m.segment = p->segment;
    m.step = p->step;
    m.heads = a.tensor.shape[0];
    const int64_t lq = a.tensor.shape[1], lk = a.tensor.shape[2];
    const TokenSide qside = enc_dec && m.stack == "decoder" ? TokenSide::Target : TokenSide::Source;
    m.queries = {qside, 0, lq};
    m.keys = {m.sublayer == "cross_attn" ? TokenSide::Source : qside, 0, lk};
    m.kind = m.sublayer == "cross_attn" ? AttentionMapKind::Cross : AttentionMapKind::Self;
    if (m.segment >= 0) {
      if (m.layer == 0) segment_rows[m.segment] = lq;
      int64_t begin = 0;
      for (const auto& [s, rows] : segment_rows)
        if (s < m.segment) begin += rows;
      m.kind = AttentionMapKind::Memory;
      m.memory_keys = lk - lq;
      m.queries.begin = begin;
      m.keys.begin = begin - m.memory_keys;
    }
    out.push_back(std::move(m));
  }
  // Sparse maps too long for a dense copy: only the CSR arrays (rows over the same tokens).
  for (const TracedArray& a : trace.arrays) {
    const auto companion = companion_of(a.name);
    if (!companion || companion->second != Companion::Indptr) continue;
    const std::string& base = companion->first;
    const auto p = parse_name(base);
    const TracedArray* values = trace.find(companion_array_name(base, Companion::Values));
    if (!p || trace.find(base) || !values || values->tensor.shape.size() != 2) continue;
    AttentionMap m;
    m.array = base;
    m.stack = p->stack;
    m.sublayer = p->sublayer;
    m.layer = p->layer;
    m.step = p->step;
    m.kind = AttentionMapKind::Sparse;
    m.heads = values->tensor.shape[0];
    const int64_t l = a.tensor.numel() - 1;
    const TokenSide side =
        enc_dec && m.stack == "decoder" ? TokenSide::Target : TokenSide::Source;
    m.queries = {side, 0, l};
    m.keys = {side, 0, l};
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace atlas
