#pragma once
// A variant's config fields declared once, as a table that drives parsing, writing,
// validation and the "did you mean" message for unknown keys (config_json.h's ConfigSection).
// A field names its key, the struct member it fills and the range it accepts:
//
//   const FieldTable<RopeConfig> kRopeFields = {
//       integer_field("rotary_dims", &RopeConfig::rotary_dims, 0, 65536),
//       number_field("theta", &RopeConfig::theta, 1.0, 1e12),
//       enum_field("pairing", &RopeConfig::pairing, kPairings)};
//   ConfigSection s = table_section<&ModelConfig::rope>("rope", kRopeFields, check_combinations);
//
// Keys are written in table order; every key is optional when read (the struct's default
// stands), so files written before a field existed still parse.
#include <functional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "core/config/config_json.h"
#include "core/config/variant_choices.h"

namespace atlas::config_json {

template <class S>
struct Field {
  std::string key;
  // Reads the JSON value into the struct (typed, range-checked), writes it back, and checks a
  // value set by code (validate_config sees structs that were never parsed).
  std::function<void(const Json&, const Reader&, S&, const std::string& path)> read;
  std::function<void(const S&, OrderedJson&)> write;
  std::function<void(const S&, const std::string& path, const std::string& origin)> validate;
};

template <class S>
using FieldTable = std::vector<Field<S>>;

template <class S>
Field<S> bool_field(std::string key, bool S::*member) {
  return {key,
          [member](const Json& v, const Reader& r, S& s, const std::string& path) {
            s.*member = r.boolean(v, path);
          },
          [member, key](const S& s, OrderedJson& j) { j[key] = s.*member; },
          [](const S&, const std::string&, const std::string&) {}};
}

template <class S>
Field<S> integer_field(std::string key, int64_t S::*member, int64_t lo, int64_t hi) {
  return {key,
          [member](const Json& v, const Reader& r, S& s, const std::string& path) {
            s.*member = r.integer(v, path);
          },
          [member, key](const S& s, OrderedJson& j) { j[key] = s.*member; },
          [member, lo, hi](const S& s, const std::string& path, const std::string& origin) {
            check_range(s.*member, lo, hi, path, origin);
          }};
}

// Any unsigned 64-bit integer (seeds).
template <class S>
Field<S> unsigned_field(std::string key, uint64_t S::*member) {
  return {key,
          [member](const Json& v, const Reader& r, S& s, const std::string& path) {
            s.*member = r.unsigned_integer(v, path);
          },
          [member, key](const S& s, OrderedJson& j) { j[key] = s.*member; },
          [](const S&, const std::string&, const std::string&) {}};
}

// A float that `check(s, path, origin)` validates: the ranges below, or a bound that depends on
// another field, or a message that says why a value is refused.
template <class S>
Field<S> checked_number_field(
    std::string key, float S::*member,
    std::type_identity_t<
        std::function<void(const S&, const std::string& path, const std::string& origin)>>
        check) {
  return {key,
          [member](const Json& v, const Reader& r, S& s, const std::string& path) {
            s.*member = r.number(v, path);
          },
          [member, key](const S& s, OrderedJson& j) { j[key] = shortest_float(s.*member); },
          std::move(check)};
}

// A float in [lo, hi] (finite; NaN fails every comparison and is refused too).
template <class S>
Field<S> number_field(std::string key, float S::*member, double lo, double hi) {
  return checked_number_field<S>(
      std::move(key), member,
      [member, lo, hi](const S& s, const std::string& path, const std::string& origin) {
        const double v = s.*member;
        if (!(v >= lo && v <= hi))
          fail(origin, path + " must be in [" + format_float(float(lo)) + ", " +
                           format_float(float(hi)) + "], got " + format_float(s.*member));
      });
}

// A float in the open interval (lo, hi) (finite; NaN refused).
template <class S>
Field<S> open_number_field(std::string key, float S::*member, double lo, double hi) {
  return checked_number_field<S>(
      std::move(key), member,
      [member, lo, hi](const S& s, const std::string& path, const std::string& origin) {
        const double v = s.*member;
        if (!(v > lo && v < hi))
          fail(origin, path + " must be in (" + format_float(float(lo)) + ", " +
                           format_float(float(hi)) + "), got " + format_float(s.*member));
      });
}

template <class S, class E>
Field<S> enum_field(std::string key, E S::*member, EnumTable<E> table) {
  return {key,
          [member, table](const Json& v, const Reader& r, S& s, const std::string& path) {
            s.*member = r.enumeration(v, path, table);
          },
          [member, key, table](const S& s, OrderedJson& j) {
            j[key] = enum_name(s.*member, table, key.c_str());
          },
          [member, table](const S& s, const std::string& path, const std::string&) {
            enum_name(s.*member, table, path.c_str());  // throws for a value outside the table
          }};
}

template <class S>
std::vector<std::string> field_keys(const FieldTable<S>& table) {
  std::vector<std::string> keys;
  for (const Field<S>& f : table) keys.push_back(f.key);
  return keys;
}

template <class S>
void read_fields(const FieldTable<S>& table, const Json& object, const Reader& r, S& s,
                 const std::string& section) {
  check_known_keys(object, field_keys(table), section, r.origin);
  for (const Field<S>& f : table)
    if (auto it = object.find(f.key); it != object.end()) f.read(*it, r, s, section + "." + f.key);
}

template <class S>
OrderedJson write_fields(const FieldTable<S>& table, const S& s) {
  OrderedJson j = OrderedJson::object();
  for (const Field<S>& f : table) f.write(s, j);
  return j;
}

template <class S>
void validate_fields(const FieldTable<S>& table, const S& s, const std::string& section,
                     const std::string& origin) {
  for (const Field<S>& f : table) f.validate(s, section + "." + f.key, origin);
}

// Where table_section keeps a section's key, table and combination check: ConfigSection holds
// plain function pointers, so the lambdas below reach them through this per-section type.
template <auto Member, class S>
struct SectionBinding {
  static inline const char* key = nullptr;
  static inline const FieldTable<S>* table = nullptr;
  static inline void (*combinations)(const ModelConfig&, const std::string&) = nullptr;
};

// The ConfigSection of ModelConfig::*Member from its field table (which must outlive it);
// `combinations` checks what the fields' ranges cannot: how the section combines with the rest
// of the config (may be null).
template <auto Member, class S>
ConfigSection table_section(const char* key, const FieldTable<S>* table,
                            void (*combinations)(const ModelConfig&, const std::string&)) {
  using Bound = SectionBinding<Member, S>;
  Bound::key = key;
  Bound::table = table;
  Bound::combinations = combinations;
  return {key,
          [](const Json& o, const Reader& r, ModelConfig& c) {
            read_fields(*Bound::table, o, r, c.*Member, Bound::key);
          },
          [](const ModelConfig& c) { return write_fields(*Bound::table, c.*Member); },
          [](const ModelConfig& c, const std::string& origin) {
            validate_fields(*Bound::table, c.*Member, Bound::key, origin);
            if (Bound::combinations) Bound::combinations(c, origin);
          }};
}

// Reads a section of "enabled" plus `table`'s fields into `out` (its defaults where a key is
// absent) and range-checks them whether or not it is enabled; returns "enabled".
template <class T>
bool read_enabled_section(const FieldTable<T>& table, const Json& o, const Reader& r, T& out,
                          const std::string& section) {
  std::vector<std::string> keys = field_keys(table);
  keys.insert(keys.begin(), "enabled");
  check_known_keys(o, keys, section, r.origin);
  bool enabled = false;
  if (auto it = o.find("enabled"); it != o.end()) enabled = r.boolean(*it, section + ".enabled");
  for (const Field<T>& f : table)
    if (auto it = o.find(f.key); it != o.end()) f.read(*it, r, out, section + "." + f.key);
  validate_fields(table, out, section, r.origin);
  return enabled;
}

// Makes `kind` the config's stack, chosen by config key `key`; a second kind is refused naming
// both keys (the stack is one choice).
inline void choose_stack(ModelConfig& c, StackKind kind, const std::string& key,
                         const std::string& origin) {
  if (!c.standard_stack())
    fail(origin, key + " and " + stack_kind_key(c.stack) +
                     " each choose what the model's layers are: enable one");
  c.stack = std::move(kind);
}

// The ConfigSection of a stack kind T (core/config/stack_kind.h): "enabled" and T's field table.
// Read: the fields go into a T of their own and are range-checked; "enabled": true makes that
// T the config's stack (a second enabled kind is refused: the stack is one choice), false drops
// it. Written: "enabled" and the fields of the config's T, or of a default T when the stack is
// another kind. Validated when the stack is a T: ranges, then `combinations` (may be null).
template <class T>
struct StackBinding {
  static inline const char* key = nullptr;
  static inline const FieldTable<T>* table = nullptr;
  static inline void (*combinations)(const ModelConfig&, const T&, const std::string&) = nullptr;
};

template <class T>
ConfigSection stack_section(const char* key, const FieldTable<T>* table,
                            void (*combinations)(const ModelConfig&, const T&, const std::string&)) {
  using Bound = StackBinding<T>;
  Bound::key = key;
  Bound::table = table;
  Bound::combinations = combinations;
  return {key,
          [](const Json& o, const Reader& r, ModelConfig& c) {
            const std::string section = Bound::key;
            T kind;
            if (read_enabled_section(*Bound::table, o, r, kind, section))
              choose_stack(c, std::move(kind), section + ".enabled", r.origin);
          },
          [](const ModelConfig& c) {
            const T* kind = std::get_if<T>(&c.stack);
            OrderedJson j = OrderedJson::object();
            j["enabled"] = kind != nullptr;
            for (const Field<T>& f : *Bound::table) f.write(kind ? *kind : T{}, j);
            return j;
          },
          [](const ModelConfig& c, const std::string& origin) {
            const T* kind = std::get_if<T>(&c.stack);
            if (!kind) return;
            validate_fields(*Bound::table, *kind, Bound::key, origin);
            if (Bound::combinations) Bound::combinations(c, *kind, origin);
          }};
}

// The ConfigSection of a part of softmax attention (core/config/attention_kind.h: Shaw's
// relation tables, the adaptive span), SoftmaxAttention::*Part: "enabled" and the part's field
// table. Read: the fields are range-checked whether or not enabled; "enabled": true adds the
// part to the config's softmax attention (refused, naming both keys, when another attention
// kind was chosen), false drops it. Written: "enabled" and the part's fields, or its defaults'.
// Validated when the config has the part.
template <class T, std::optional<T> SoftmaxAttention::*Part>
struct SoftmaxPartBinding {
  static inline const char* key = nullptr;
  static inline const FieldTable<T>* table = nullptr;
};

template <class T, std::optional<T> SoftmaxAttention::*Part>
ConfigSection softmax_part_section(const char* key, const FieldTable<T>* table) {
  using Bound = SoftmaxPartBinding<T, Part>;
  Bound::key = key;
  Bound::table = table;
  return {key,
          [](const Json& o, const Reader& r, ModelConfig& c) {
            T part;
            if (read_enabled_section(*Bound::table, o, r, part, Bound::key))
              softmax_attention_for(c, Bound::key, r.origin).*Part = std::move(part);
          },
          [](const ModelConfig& c) {
            const SoftmaxAttention* softmax = c.softmax();
            const bool on = softmax && (softmax->*Part).has_value();
            OrderedJson j = OrderedJson::object();
            j["enabled"] = on;
            for (const Field<T>& f : *Bound::table) f.write(on ? *(softmax->*Part) : T{}, j);
            return j;
          },
          [](const ModelConfig& c, const std::string& origin) {
            const SoftmaxAttention* softmax = c.softmax();
            if (softmax && softmax->*Part)
              validate_fields(*Bound::table, *(softmax->*Part), Bound::key, origin);
          }};
}

}  // namespace atlas::config_json
