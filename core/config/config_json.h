#pragma once
// Internal to the config parser, the variants' config sections and the dump reader: typed,
// strict reads of nlohmann JSON values with messages that name the origin and the key.
#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/config/config.h"
#include "core/tensor/error.h"

namespace atlas::config_json {

using Json = nlohmann::json;                 // parsing: std::map keys, O(log n) duplicate checks
using OrderedJson = nlohmann::ordered_json;  // writing: keys in struct order

template <typename E>
using EnumTable = std::vector<std::pair<const char*, E>>;

[[noreturn]] void fail(const std::string& origin, const std::string& message);
std::string quote(const std::string& s);                      // as JSON, control chars escaped
std::string join_quoted(const std::vector<std::string>& words);
std::string got(const Json& v);                               // "got 512.5" / "got string"
std::string format_float(float f);
double shortest_float(float f);  // shortest decimal that reads back as exactly f
// Unknown keys of `object` fail with the nearest known key suggested.
void check_known_keys(const Json& object, const std::vector<std::string>& known,
                      const std::string& what, const std::string& origin);
void check_range(int64_t value, int64_t lo, int64_t hi, const std::string& key,
                 const std::string& origin);

struct Reader {
  const std::string& origin;

  int64_t integer(const Json& v, const std::string& key) const {
    if (v.is_number_unsigned()) {
      auto u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        fail(origin, key + " is out of range, " + got(v));
      return static_cast<int64_t>(u);
    }
    if (v.is_number_integer()) return v.get<int64_t>();
    if (v.is_number_float()) {
      double d = v.get<double>();
      if (d != std::floor(d)) fail(origin, key + " must be an integer, " + got(v));
      // 2^63 is exactly representable; anything >= it would overflow the cast.
      if (d < -9223372036854775808.0 || d >= 9223372036854775808.0)
        fail(origin, key + " is out of range, " + got(v));
      return static_cast<int64_t>(d);
    }
    fail(origin, key + " must be an integer, " + got(v));
  }

  uint64_t unsigned_integer(const Json& v, const std::string& key) const {
    if (v.is_number_unsigned()) return v.get<uint64_t>();
    if (v.is_number_integer() || (v.is_number_float() && v.get<double>() < 0))
      fail(origin, key + " must be a non-negative integer, " + got(v));
    if (v.is_number_float()) {
      double d = v.get<double>();
      if (d != std::floor(d)) fail(origin, key + " must be a non-negative integer, " + got(v));
      if (d >= 18446744073709551616.0) fail(origin, key + " is out of range, " + got(v));
      return static_cast<uint64_t>(d);
    }
    fail(origin, key + " must be a non-negative integer, " + got(v));
  }

  float number(const Json& v, const std::string& key) const {
    if (!v.is_number()) fail(origin, key + " must be a number, " + got(v));
    double d = v.get<double>();
    float f = static_cast<float>(d);
    if (!std::isfinite(f)) fail(origin, key + " is out of range for a 32-bit float, " + got(v));
    return f;
  }

  bool boolean(const Json& v, const std::string& key) const {
    if (!v.is_boolean()) fail(origin, key + " must be true or false, " + got(v));
    return v.get<bool>();
  }

  std::string string(const Json& v, const std::string& key) const {
    if (!v.is_string()) fail(origin, key + " must be a string, " + got(v));
    return v.get<std::string>();
  }

  template <typename E>
  E enumeration(const Json& v, const std::string& key, const EnumTable<E>& table) const {
    std::vector<std::string> names;
    for (const auto& [name, value] : table) names.push_back(name);
    if (!v.is_string())
      fail(origin, key + " must be a string, one of " + join_quoted(names) + "; " + got(v));
    const std::string& s = v.get_ref<const std::string&>();
    for (const auto& [name, value] : table)
      if (s == name) return value;
    fail(origin, key + " must be one of " + join_quoted(names) + "; got " + quote(s));
  }
};


template <typename E>
std::string enum_name(E value, const EnumTable<E>& table, const char* what) {
  for (const auto& [name, v] : table)
    if (v == value) return name;
  throw AtlasError(std::string("config_to_json: invalid ") + what + " value " +
                         std::to_string(static_cast<int>(value)));
}

// A nested object of the config owned by one variant, e.g. {"shaw": {"max_distance": 20}}.
// parse_config reads it when present, config_to_json always writes it, validate_config checks
// it. A variant folder's <name>_config.cpp defines
//   std::vector<ConfigSection> atlas::config_json::variants::<m>_sections();
// and the list of them is generated from the folders (config_sections.cpp).
struct ConfigSection {
  const char* key;
  void (*read)(const Json& object, const Reader& r, ModelConfig& c);
  OrderedJson (*write)(const ModelConfig& c);
  void (*validate)(const ModelConfig& c, const std::string& origin);
  // The key of a section that must be read first (GTrXL's "gating" sets the gates of the stack
  // "xl" chose); null: none. Otherwise sections are read in folder-name order.
  const char* after = nullptr;
};
const std::vector<ConfigSection>& config_sections();

// A choice a config can make that some other choice excludes: a row of the compatibility table
// (variant_choices.h). A variant folder's <name>_config.cpp defines its rows by
//   std::vector<VariantChoice> atlas::config_json::variants::<m>_choices();
// and the rows of the options of core/config are variant_choices.cpp's own.
struct VariantChoice {
  const char* name;                   // how other rows name it
  const char* key;                    // the config key a message names it by
  bool (*on)(const ModelConfig& c);   // whether a config makes it
  std::vector<const char*> groups;    // groups other rows exclude it by, as "@group"
  // The choices it cannot be combined with (names or "@group"), for the reason `why`; a pair is
  // listed once, in the row of the choice that brings the restriction.
  std::vector<const char*> excludes = {};
  const char* why = nullptr;
};
// The groups of the table: a row names "@<group>" to exclude each of its members.
//   attention   makes the attention kind other than plain softmax (attention_kind.h)
//   efficient   replaces the softmax sub-layer's scores or pattern, or keeps nothing of its own
//               attention (the reversible stack)
//   replacing   replaces the Transformer stacks altogether
//   not_plain   changes plain softmax attention with its standard key layout and mask
//   variant     a variant whose runs a decoder's cached prefix cannot continue (a config with
//               none may use the prefix cache, core/model/prefix_cache.h)

}  // namespace atlas::config_json
