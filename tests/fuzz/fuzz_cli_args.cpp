// libFuzzer target for the CLI's argument parser (app/cli/args.h): any argv must either parse
// or throw atlas::AtlasError, and what parses must keep the parser's promises. The input is the
// argument list, NUL-separated; its first byte picks one verb's option table.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "app/cli/args.h"
#include "core/tensor/error.h"

namespace {

using atlas::cli::ArgSpec;

// Tables of real verbs (app/cli/cmd_*.cpp): options with values, switches.
const ArgSpec kSpecs[] = {
    {{"--text", "--text-file", "--image", "--target", "--seed", "--dump", "--pad-to", "--threads",
      "--drop-layers", "--layerdrop-rate", "--drop-heads", "--logit-lens", "--top-k", "--backend", "--device"},
     {"--scores", "--hidden"}},
    {{"--preset", "--config", "--length", "--layer", "--head", "--causal", "--tile", "--zoom", "--out"},
     {"--stats"}},
    {{"--image", "--query", "--seed", "--dump"}, {}},
    {{"--length", "--d", "--features", "--std", "--seed"}, {"--causal"}},
    {{}, {}},
};

void check(bool ok) {
  if (!ok) __builtin_trap();
}

// printable() promises a message line: no control byte survives.
void check_printable(const std::string& s) {
  for (unsigned char c : atlas::cli::printable(s, 64)) check(c >= 0x20 && c != 0x7f);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const ArgSpec& spec = kSpecs[data[0] % (sizeof kSpecs / sizeof kSpecs[0])];
  std::vector<std::string> argv;
  std::string cur;
  for (size_t i = 1; i < size; ++i) {
    if (data[i] == 0) {
      argv.push_back(cur);
      cur.clear();
    } else {
      cur += static_cast<char>(data[i]);
    }
  }
  if (!cur.empty()) argv.push_back(cur);

  for (const auto& a : argv) check_printable(a);
  try {
    const atlas::cli::Args args(argv, spec);
    // Promises: every known key given is reported, at most once (duplicates are refused).
    for (const auto& key : spec.options) {
      if (!args.has(key)) continue;
      check(args.get(key).has_value());
      try {
        (void)args.get_int(key, 0, -5, 1000);
      } catch (const atlas::AtlasError& e) {
        check_printable(e.what());
      }
      try {  // an index: an integer now, then in its range or refused naming the range
        if (const auto idx = args.get_index(key)) {
          check(idx->key == key && idx->text == *args.get(key));
          try {
            const long long v = atlas::cli::check_index(*idx, 0, 10, "ten things");
            check(v >= 0 && v <= 10 && v == idx->value);
          } catch (const atlas::AtlasError& e) {
            check(std::string(e.what()).find("(0 to 10)") != std::string::npos);
            check(idx->value < 0 || idx->value > 10);
            check_printable(e.what());
          }
        }
      } catch (const atlas::AtlasError& e) {
        check_printable(e.what());
      }
      try {
        const auto v = atlas::cli::parse_int_list(key, *args.get(key), {"A", "B"}, 0, INT64_MAX);
        check(v.size() == 2 && v[0] >= 0 && v[1] >= 0);
      } catch (const atlas::AtlasError& e) {
        check_printable(e.what());
      }
    }
    for (const auto& key : spec.flags) check(!args.has(key) || !args.get(key).has_value());
    size_t dashed = 0;
    for (const auto& a : argv) dashed += a.size() > 2 && a.rfind("--", 0) == 0;
    check(args.positionals().size() <= argv.size());
    (void)dashed;
  } catch (const atlas::AtlasError& e) {
    check_printable(e.what());
  }
  return 0;
}
