#pragma once
// A small strict argument parser for the `atlas` verbs: `--key value` options, `--flag`
// switches and positionals. Unknown options are errors (with the nearest known one suggested).
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace atlas::cli {

struct ArgSpec {
  std::set<std::string> options;  // take a value, e.g. "--text"
  std::set<std::string> flags;    // no value, e.g. "--json"
};

class Args {
 public:
  // Throws AtlasError on unknown options or a missing value.
  Args(const std::vector<std::string>& argv, const ArgSpec& spec);

  bool has(const std::string& key) const;  // option given or flag set
  std::optional<std::string> get(const std::string& key) const;
  std::string get_or(const std::string& key, const std::string& fallback) const;
  std::string require(const std::string& key) const;  // throws "missing --key"
  long long get_int(const std::string& key, long long fallback, long long lo, long long hi) const;
  const std::vector<std::string>& positionals() const { return positionals_; }

 private:
  std::map<std::string, std::string> values_;
  std::set<std::string> flags_;
  std::vector<std::string> positionals_;
};

// Every verb: int cmd_<verb>(const std::vector<std::string>& args) returning the exit code;
// errors are thrown as AtlasError and printed by main as one line on stderr.
using Command = int (*)(const std::vector<std::string>& args);

}  // namespace atlas::cli
