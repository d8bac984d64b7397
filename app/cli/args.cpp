#include "app/cli/args.h"

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "core/config/config.h"
#include "core/tensor/error.h"

namespace atlas::cli {

namespace {

// strtoll with the whole string consumed and no overflow; false otherwise.
bool parse_ll(const std::string& s, long long& out) {
  if (s.empty() || s.size() > 64) return false;
  // strtoll skips leading white space and accepts a '+': a number here is [-]digits only.
  const char c0 = s[0];
  if (!(c0 == '-' || (c0 >= '0' && c0 <= '9'))) return false;
  errno = 0;
  char* end = nullptr;
  out = std::strtoll(s.c_str(), &end, 10);
  return errno != ERANGE && end == s.c_str() + s.size() && end != s.c_str();
}

std::string range_text(long long lo, long long hi) {
  return std::to_string(lo) + " and " + std::to_string(hi);
}

}  // namespace

std::string printable(std::string_view s, size_t max_bytes) {
  if (max_bytes < 16) max_bytes = 16;
  const bool cut = s.size() > max_bytes;
  const size_t head = cut ? max_bytes * 2 / 3 : s.size();
  const size_t tail_from = cut ? s.size() - (max_bytes - head) : s.size();
  std::string out;
  out.reserve(std::min(s.size(), max_bytes) + 8);
  auto put = [&out](unsigned char c) {
    switch (c) {
      case '\0': out += "\\0"; return;
      case '\n': out += "\\n"; return;
      case '\r': out += "\\r"; return;
      case '\t': out += "\\t"; return;
      default: break;
    }
    if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  };
  for (size_t i = 0; i < head; ++i) put(static_cast<unsigned char>(s[i]));
  if (cut) {
    out += "...";
    for (size_t i = tail_from; i < s.size(); ++i) put(static_cast<unsigned char>(s[i]));
  }
  return out;
}

Args::Args(const std::vector<std::string>& argv, const ArgSpec& spec) {
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a.size() > 2 && a.rfind("--", 0) == 0) {
      std::string key = a, value;
      bool inline_value = false;
      if (auto eq = a.find('='); eq != std::string::npos) {
        key = a.substr(0, eq);
        value = a.substr(eq + 1);
        inline_value = true;
      }
      if (spec.flags.count(key)) {
        if (inline_value)
          throw AtlasError(printable(key) + " is a switch and takes no value (got \"" +
                           printable(a) + "\")");
        if (!flags_.insert(key).second) throw AtlasError(key + " given twice");
      } else if (spec.options.count(key)) {
        if (!inline_value) {
          if (i + 1 >= argv.size()) throw AtlasError("option " + key + " needs a value");
          value = argv[++i];
        }
        if (!values_.emplace(key, value).second)
          throw AtlasError(key + " given twice (\"" + printable(values_.at(key), 80) +
                           "\" and \"" + printable(value, 80) + "\"); give it once");
      } else {
        std::vector<std::string> known(spec.options.begin(), spec.options.end());
        known.insert(known.end(), spec.flags.begin(), spec.flags.end());
        std::string hint = nearest(key, known);
        throw AtlasError("unknown option " + printable(key, 80) +
                         (hint.empty() ? std::string() : "; did you mean " + hint + "?"));
      }
    } else {
      positionals_.push_back(a);
    }
  }
}

bool Args::has(const std::string& key) const { return flags_.count(key) || values_.count(key); }

std::optional<std::string> Args::get(const std::string& key) const {
  auto it = values_.find(key);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::string Args::get_or(const std::string& key, const std::string& fallback) const {
  auto v = get(key);
  return v ? *v : fallback;
}

std::string Args::require(const std::string& key) const {
  auto v = get(key);
  if (!v) throw AtlasError("missing " + key);
  return *v;
}

long long Args::get_int(const std::string& key, long long fallback, long long lo,
                        long long hi) const {
  auto v = get(key);
  if (!v) return fallback;
  long long n = 0;
  if (!parse_ll(*v, n))
    throw AtlasError(key + " must be an integer between " + range_text(lo, hi) + ", got \"" +
                     printable(*v, 80) + "\"");
  if (n < lo || n > hi)
    throw AtlasError(key + " must be between " + range_text(lo, hi) + ", got " + *v);
  return n;
}

IndexArg parse_index_arg(const std::string& key, const std::string& text) {
  IndexArg arg{key, text, 0};
  if (parse_ll(text, arg.value)) return arg;
  // [-]digits too long for 64 bits: out of every range, which check_index says with the text.
  const size_t digits = text.size() > 0 && text[0] == '-' ? 1 : 0;
  if (text.size() > digits && text.size() <= 4096 &&
      text.find_first_not_of("0123456789", digits) == std::string::npos) {
    arg.value = digits ? LLONG_MIN : LLONG_MAX;
    return arg;
  }
  throw AtlasError(key + " must be an integer, got \"" + printable(text, 80) + "\"");
}

long long check_index(const IndexArg& arg, long long lo, long long hi, const std::string& what,
                      const std::string& more) {
  if (arg.value >= lo && arg.value <= hi) return arg.value;
  const std::string range = hi < lo ? std::string("none") : std::to_string(lo) + " to " + std::to_string(hi);
  throw AtlasError(arg.key + " " + printable(arg.text, 80) + " is out of range: " + what + " (" + range +
                   (more.empty() ? "" : ", " + more) + ")");
}

std::optional<IndexArg> Args::get_index(const std::string& key) const {
  auto v = get(key);
  if (!v) return std::nullopt;
  return parse_index_arg(key, *v);
}

std::vector<long long> parse_int_list(const std::string& key, const std::string& value,
                                      const std::vector<std::string>& names, long long lo,
                                      long long hi) {
  std::string form;
  for (const auto& n : names) form += (form.empty() ? "" : ",") + n;
  std::vector<long long> out;
  size_t start = 0;
  for (size_t k = 0; k < names.size(); ++k) {
    const size_t comma = value.find(',', start);
    const bool last = k + 1 == names.size();
    if (last != (comma == std::string::npos))
      throw AtlasError(key + " must be " + form + " (" + std::to_string(names.size()) +
                       " comma-separated integers), got \"" + printable(value, 80) + "\"");
    const std::string field = value.substr(start, last ? std::string::npos : comma - start);
    long long n = 0;
    if (!parse_ll(field, n))
      throw AtlasError(key + " " + names[k] + " must be an integer, got \"" + printable(field, 80) +
                       "\" (in " + form + " = \"" + printable(value, 80) + "\")");
    if (n < lo || n > hi)
      throw AtlasError(key + " " + names[k] + " must be between " + range_text(lo, hi) +
                       ", got " + field);
    out.push_back(n);
    start = comma + 1;
  }
  return out;
}

}  // namespace atlas::cli
