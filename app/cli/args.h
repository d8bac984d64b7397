#pragma once
// A small strict argument parser for the `atlas` verbs: `--key value` options, `--flag`
// switches and positionals. Unknown options are errors (with the nearest known one suggested),
// and so is an option or switch given twice: no verb has an option meant to repeat (lists are
// comma-separated values of one option), so a second --text is a mistake, not "last one wins".
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace atlas::cli {

struct ArgSpec {
  std::set<std::string> options;  // take a value, e.g. "--text"
  std::set<std::string> flags;    // no value, e.g. "--json"
};

// An index option as given (--layer, --step, --segment, --head, --query, --plot, ...), read
// before the run and checked against it once its range is known (check_index). `value` of a
// number beyond 64 bits is the nearest 64-bit value, which no range holds; `text` is as typed.
struct IndexArg {
  std::string key;
  std::string text;
  long long value = 0;
};

class Args {
 public:
  // Throws AtlasError on unknown options, a missing value, a value given to a switch, or an
  // option or switch given twice ("--text given twice").
  Args(const std::vector<std::string>& argv, const ArgSpec& spec);

  bool has(const std::string& key) const;  // option given or flag set
  std::optional<std::string> get(const std::string& key) const;
  std::string get_or(const std::string& key, const std::string& fallback) const;
  std::string require(const std::string& key) const;  // throws "missing --key"
  // The option's integer value in [lo, hi], else `fallback`; throws naming the key and the
  // valid range for anything else (not a number, out of range, beyond 64 bits).
  long long get_int(const std::string& key, long long fallback, long long lo, long long hi) const;
  // The index option `key` when given (parse_index_arg), to be checked with check_index.
  std::optional<IndexArg> get_index(const std::string& key) const;
  const std::vector<std::string>& positionals() const { return positionals_; }

 private:
  std::map<std::string, std::string> values_;
  std::set<std::string> flags_;
  std::vector<std::string> positionals_;
};

// `text` as an IndexArg of `key`: [-]digits, else throws "KEY must be an integer, got "TEXT"".
IndexArg parse_index_arg(const std::string& key, const std::string& text);
// arg.value when it is in [lo, hi]; otherwise throws "KEY TEXT is out of range: WHAT (LO to HI)",
// e.g. "--query 40 is out of range: this input has 12 tokens (0 to 11)". `what` says what holds
// the range; `more` adds accepted values outside it ("or -1 for all"). hi < lo: "(none)".
long long check_index(const IndexArg& arg, long long lo, long long hi, const std::string& what,
                      const std::string& more = "");

// Exactly `names.size()` comma-separated integers, each in [lo, hi], e.g. --tile R0,C0,ROWS,COLS
// or --query ROW,COL. Throws AtlasError naming `key`, the expected form and the offending field.
std::vector<long long> parse_int_list(const std::string& key, const std::string& value,
                                      const std::vector<std::string>& names, long long lo,
                                      long long hi);

// A user string as it may appear inside a one-line message: NUL, other control bytes and DEL
// are escaped (\0, \n, \x1b, ...) so a message is never cut short or split over lines, and
// strings longer than `max_bytes` keep their head and tail around "...". Other bytes (UTF-8)
// pass through unchanged.
std::string printable(std::string_view s, size_t max_bytes = 512);

// Every verb: int cmd_<verb>(const std::vector<std::string>& args) returning the exit code;
// errors are thrown as AtlasError and printed by main as one line on stderr.
using Command = int (*)(const std::vector<std::string>& args);

}  // namespace atlas::cli
