#include "app/cli/args.h"

#include <cerrno>
#include <cstdlib>
#include <vector>

#include "core/config/config.h"
#include "core/tensor/error.h"

namespace atlas::cli {

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
      if (spec.flags.count(key) && !inline_value) {
        flags_.insert(key);
      } else if (spec.options.count(key)) {
        if (!inline_value) {
          if (i + 1 >= argv.size()) throw AtlasError("option " + key + " needs a value");
          value = argv[++i];
        }
        values_[key] = value;
      } else {
        std::vector<std::string> known(spec.options.begin(), spec.options.end());
        known.insert(known.end(), spec.flags.begin(), spec.flags.end());
        std::string hint = nearest(key, known);
        throw AtlasError("unknown option " + key +
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
  errno = 0;
  char* end = nullptr;
  long long n = std::strtoll(v->c_str(), &end, 10);
  if (v->empty() || *end != '\0' || errno == ERANGE)
    throw AtlasError(key + " must be an integer, got \"" + *v + "\"");
  if (n < lo || n > hi)
    throw AtlasError(key + " must be between " + std::to_string(lo) + " and " +
                     std::to_string(hi) + ", got " + *v);
  return n;
}

}  // namespace atlas::cli
