// atlas search: token search (core/analysis/token_search.h): the heads whose matching queries
// put the most attention on matching keys, over every map of one run.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "app/cli/commands.h"
#include "app/cli/output_file.h"
#include "core/analysis/token_search.h"
#include "core/analysis/weight_check.h"
#include "core/formats/atomic_file.h"
#include "core/formats/input_file.h"
#include "core/formats/model_io.h"
#include "core/tensor/error.h"

namespace atlas::cli {
namespace {

const char* kSearchUsage =
    "usage: atlas search MODEL (--text S | --text-file F) [--target S] --query-token P --key-token P\n"
    "                    [--top K] [--csv FILE | --json]\n"
    "  Ranks every head of every attention map by how much attention the queries matching P put\n"
    "  on the keys matching the key pattern: the mean over matching query rows of the weight on\n"
    "  matching keys (0..1), with the strongest single link.\n"
    "  Patterns match token labels case-insensitively, ignoring the word-start marks of the\n"
    "  tokenizers (space, \u2423, \u0120, \u2581); \"run*\" matches by prefix, \"*\" any token.\n"
    "  --top K     the K best heads (default 10; 0 = all)\n"
    "  --csv FILE / --json   every scored head\n";

std::string position_label(const Trace& t, const AttentionMap& m, int64_t row, bool query) {
  const std::vector<std::string> labels = query ? query_labels(t, m) : key_labels(t, m);
  return std::to_string(row) + " \"" + printable(labels[size_t(row)]) + "\"";
}

}  // namespace

int cmd_search(const std::vector<std::string>& args) {
  if (wants_help(args, kSearchUsage)) return 0;
  Args a(args, {{"--text", "--text-file", "--target", "--query-token", "--key-token", "--top", "--csv"}, {"--json"}});
  if (a.positionals().size() != 1) throw AtlasError("search takes one MODEL (see atlas search --help)");
  if (int(a.has("--text")) + int(a.has("--text-file")) != 1)
    throw AtlasError("search needs exactly one of --text, --text-file");
  if (a.has("--csv") && a.has("--json")) throw AtlasError("search writes one of --csv, --json");
  if (auto f = a.get("--csv")) check_output_file("--csv", *f);
  const std::string query = a.require("--query-token"), key = a.require("--key-token");
  const int64_t top = a.get_int("--top", 10, 0, 1 << 30);
  const Model model = load_model(a.positionals()[0]);
  for (const auto& w : model.warnings()) std::fprintf(stderr, "warning: %s\n", printable(w).c_str());
  for (const auto& w : weight_warnings(model)) std::fprintf(stderr, "warning: %s\n", printable(w).c_str());
  const std::string text = a.has("--text") ? a.require("--text") : read_input_file(a.require("--text-file"), InputKind::Text);
  const RunResult run = model.run(text, a.get_or("--target", ""), RunOptions{});
  const std::vector<TokenLinkScore> scores = search_token_links(run.trace, query, key);
  if (scores.empty()) throw AtlasError("search: no attention map has both a matching query and a matching key");
  if (auto f = a.get("--csv")) {
    std::ostringstream out;
    out.precision(9);
    out << "map,head,score,queries,best_query,best_key,best_weight\n";
    for (const auto& s : scores)
      out << s.map.array << ',' << s.head << ',' << s.score << ',' << s.queries << ',' << s.best_query << ','
          << s.best_key << ',' << s.best_weight << '\n';
    write_file_atomically(*f, out.str());
    std::printf("wrote %zu heads to %s\n", scores.size(), f->c_str());
    return 0;
  }
  if (a.has("--json")) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& s : scores)
      j.push_back({{"map", s.map.array}, {"head", s.head}, {"score", s.score}, {"queries", s.queries},
                   {"best_query", s.best_query}, {"best_key", s.best_key}, {"best_weight", s.best_weight}});
    std::printf("%s\n", j.dump(1).c_str());
    return 0;
  }
  std::printf("heads by the attention of queries \"%s\" on keys \"%s\":\n", printable(query).c_str(), printable(key).c_str());
  std::printf("%-30s %4s %8s  %s\n", "map", "head", "score", "strongest link (query -> key, weight)");
  for (size_t i = 0; i < scores.size() && (top == 0 || int64_t(i) < top); ++i) {
    const auto& s = scores[i];
    std::printf("%-30s %4lld %8.4f  %s -> %s, %.4f\n", s.map.array.c_str(), (long long)s.head, s.score,
                position_label(run.trace, s.map, s.best_query, true).c_str(),
                position_label(run.trace, s.map, s.best_key, false).c_str(), s.best_weight);
  }
  return 0;
}

}  // namespace atlas::cli
