// atlas corpus-query: the strongest links of a corpus index (atlas corpus) with their place in
// the document, or its head-statistics table (core/analysis/corpus_query.h).
#include <cstdio>

#include "app/cli/commands.h"
#include "core/analysis/corpus_query.h"
#include "core/tensor/error.h"

namespace atlas::cli {
namespace {

const char* kCorpusQueryUsage =
    "usage: atlas corpus-query DIR [--map NAME | --layer L] [--head H] [--query-token S]\n"
    "                          [--key-token S] [--top N] [--context C]\n"
    "       atlas corpus-query DIR --heads [--map NAME | --layer L] [--head H]\n"
    "  The N strongest attention links (default 10) of the index in DIR (written by atlas corpus\n"
    "  or corpus-merge) that pass the filters, each with C tokens of its document around the\n"
    "  query and the key (default 8): the query marked [[like this]], the key <<like this>>.\n"
    "  --map NAME       one map, e.g. decoder.layer1.attn (an unknown name lists them)\n"
    "  --layer L        the maps of layer L (a Universal Transformer's step n is layer n - 1)\n"
    "  --head H         one head\n"
    "  --query-token S, --key-token S  the query's or key's token: its label, or the label\n"
    "                   without a leading space mark or WordPiece ## (\"the\" matches \"␣the\")\n"
    "  --heads          the head statistics averaged over the documents instead of links\n";

void print_heads(const CorpusIndex& index, const CorpusLinkQuery& q) {
  check_head_table_query(index, q);  // an unknown map, layer or head is refused, not an empty table
  std::printf("%-28s %4s %9s", "map", "head", "documents");
  for (int s = 0; s < kHeadStatisticCount; ++s)
    std::printf(" %15s", head_statistic_name(HeadStatistic(s)));
  std::printf("\n");
  for (const auto& [key, row] : index.state.heads) {
    if ((q.map && map_name(key) != *q.map) || (q.layer && map_layer_row(key) != *q.layer) ||
        (q.head && key.head != *q.head))
      continue;
    std::printf("%-28s %4lld %9lld", map_name(key).c_str(), (long long)key.head,
                (long long)row.documents);
    for (int s = 0; s < kHeadStatisticCount; ++s) std::printf(" %15.4f", row.mean(s));
    std::printf("\n");
  }
}

}  // namespace

int cmd_corpus_query(const std::vector<std::string>& args) {
  if (wants_help(args, kCorpusQueryUsage)) return 0;
  Args a(args,
         {{"--map", "--layer", "--head", "--query-token", "--key-token", "--top", "--context"},
          {"--heads"}});
  if (a.positionals().size() != 1)
    throw AtlasError("corpus-query takes one DIR (see atlas corpus-query --help)");
  if (a.has("--map") && a.has("--layer")) throw AtlasError("give --map or --layer, not both");
  if (a.has("--heads"))
    for (const char* links_only : {"--query-token", "--key-token", "--top", "--context"})
      if (a.has(links_only))
        throw AtlasError(std::string(links_only) + " filters links; --heads prints the head table");
  CorpusLinkQuery q;
  q.map = a.get("--map");
  // Checked against the index by find_corpus_links, which names the layers and heads it holds.
  if (auto layer = a.get_index("--layer")) q.layer = layer->value;
  if (auto head = a.get_index("--head")) q.head = head->value;
  q.query_token = a.get("--query-token");
  q.key_token = a.get("--key-token");
  q.top = a.get_int("--top", 10, 1, 1000000);
  const int64_t context = a.get_int("--context", 8, 0, 100000);

  const std::string dir = a.positionals()[0];
  const CorpusIndex index = read_corpus_folder(dir);
  const CorpusIdentity& id = index.identity;
  std::printf("%s: %s over %s, %lld of %lld documents (%lld measured, %lld skipped)%s\n",
              printable(dir).c_str(), printable(id.model_argument).c_str(),
              printable(id.corpus_path).c_str(), (long long)index.documents_done(),
              (long long)id.documents, (long long)index.state.measured,
              (long long)index.state.skipped.size(),
              index.complete()   ? ""
              : index.finished() ? " (some shards only)"
                                 : " (unfinished: run atlas corpus again to resume)");
  if (a.has("--heads")) {
    print_heads(index, q);
    return 0;
  }
  const std::vector<CorpusLinkMatch> found = find_corpus_links(index, q);
  if (found.empty()) {
    std::printf("no link matches\n");
    return 0;
  }
  for (size_t i = 0; i < found.size(); ++i) {
    const CorpusLinkMatch& m = found[i];
    const CorpusDocumentTokens& doc = index.state.documents.at(m.link.document);
    const auto& tokens = m.side == TokenSide::Source ? doc.source : doc.target;
    std::printf("%zu. %.6g  %s head %lld  document %lld  query %lld %s -> key %lld %s\n", i + 1,
                double(m.link.weight), map_name(m.map).c_str(), (long long)m.map.head,
                (long long)m.link.document, (long long)m.link.query,
                printable(tokens[size_t(m.link.query)]).c_str(), (long long)m.link.key,
                printable(tokens[size_t(m.link.key)]).c_str());
    std::printf("   %s\n", printable(corpus_link_context(tokens, m.link.query, m.link.key, context,
                                                         id.token_join),
                                     4096)
                               .c_str());
  }
  return 0;
}

}  // namespace atlas::cli
