// A corpus folder on disk (corpus_store.h): the manifest and documents.jsonl, read and written.
// The views (heads.csv, heads/*.npy, links.csv) are in corpus_views.cpp.
#include "core/analysis/corpus_store.h"

#include <algorithm>
#include <cfloat>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "core/config/config_limits.h"
#include "core/formats/atomic_file.h"
#include "core/formats/input_file.h"
#include "core/formats/json_text.h"
#include "core/formats/mapped_file.h"
#include "core/tensor/error.h"

namespace atlas {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {

constexpr const char* kFormat = "atlas-corpus";
constexpr int kVersion = 1;

// Compact JSON; bytes that are not UTF-8 (a path, a document line) become U+FFFD rather than
// failing the write. The replacement is idempotent, so a resumed run writes the same bytes.
std::string dump(const ojson& j) { return j.dump(-1, ' ', false, ojson::error_handler_t::replace); }

const char* side_name(TokenSide s) { return token_side_name(s); }

ojson map_fields(const MapHead& k) {
  return {{"map", map_name(k)},   {"stack", k.stack}, {"sublayer", k.sublayer},
          {"segment", k.segment}, {"step", k.step},   {"layer", k.layer},
          {"head", k.head}};
}

// Reading: every field checked, every error naming the file and the field.
struct ManifestReader {
  std::string origin;
  [[noreturn]] void fail(const std::string& what) const { throw AtlasError(origin + ": " + what); }
  const nlohmann::json& at(const nlohmann::json& j, const char* key) const {
    if (!j.is_object() || !j.contains(key)) fail(std::string("\"") + key + "\" is missing");
    return j[key];
  }
  int64_t integer(const nlohmann::json& j, const char* key, int64_t lo = INT64_MIN) const {
    const auto& v = at(j, key);
    if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > INT64_MAX) ||
        v.get<int64_t>() < lo)
      fail(std::string("\"") + key + "\" is not an integer" +
           (lo == 0   ? " >= 0"
            : lo == 1 ? " >= 1"
                      : ""));
    return v.get<int64_t>();
  }
  // An integer that indexes or counts something: checked against the range it may take before
  // anything is sized by it. `where` names the entry ("\"heads\" entry 3: "), `why` the range.
  int64_t integer_in(const nlohmann::json& j, const char* key, int64_t lo, int64_t hi,
                     const std::string& where, const std::string& why) const {
    const auto& v = at(j, key);
    if (!v.is_number_integer()) fail(where + "\"" + key + "\" is not an integer");
    const bool big = v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX);
    if (big || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
      fail(where + "\"" + key + "\" is " + v.dump() + ", out of range: it must be from " +
           std::to_string(lo) + " to " + std::to_string(hi) + " (" + why + ")");
    return v.get<int64_t>();
  }
  std::string string(const nlohmann::json& j, const char* key) const {
    const auto& v = at(j, key);
    if (!v.is_string()) fail(std::string("\"") + key + "\" is not a string");
    return v.get<std::string>();
  }
  bool boolean(const nlohmann::json& j, const char* key) const {
    const auto& v = at(j, key);
    if (!v.is_boolean()) fail(std::string("\"") + key + "\" is not true or false");
    return v.get<bool>();
  }
  const nlohmann::json& array(const nlohmann::json& j, const char* key) const {
    const auto& v = at(j, key);
    if (!v.is_array()) fail(std::string("\"") + key + "\" is not an array");
    return v;
  }
  // The map and head of a "heads" or "links" entry; every number within what a model can have
  // (core/config/config_limits.h) and a segment within the run's token limit.
  MapHead map_head_of(const nlohmann::json& j, const std::string& where, int64_t token_limit) const {
    AttentionMap m;
    m.stack = string(j, "stack");
    m.sublayer = string(j, "sublayer");
    m.segment = integer_in(j, "segment", -1, token_limit - 1, where,
                           "-1 for none, else a Transformer-XL segment within the " +
                               std::to_string(token_limit) + "-token limit");
    m.step = integer_in(j, "step", -1, kMaxUniversalSteps, where,
                        "-1 for none, else a Universal Transformer step from 1");
    if (m.step == 0) fail(where + "\"step\" is 0: steps are numbered from 1 (-1 for none)");
    m.layer = integer_in(j, "layer", 0, kMaxLayers - 1, where,
                         "no model has more than " + std::to_string(kMaxLayers) + " layers");
    return map_head(m, integer_in(j, "head", 0, kMaxHeads - 1, where,
                                  "no model has more than " + std::to_string(kMaxHeads) + " heads"));
  }
  TokenSide side(const nlohmann::json& j) const {
    const std::string s = string(j, "side");
    for (TokenSide t : {TokenSide::Source, TokenSide::Target})
      if (s == token_side_name(t)) return t;
    fail("\"side\" is \"" + s + "\", expected \"source\" or \"target\"");
  }
};

CorpusIdentity read_identity(const ManifestReader& r, const nlohmann::json& j) {
  CorpusIdentity id;
  const auto& model = r.at(j, "model");
  id.model_argument = r.string(model, "argument");
  id.model_name = r.string(model, "name");
  id.model_fingerprint = r.string(model, "fingerprint");
  id.token_join = r.string(model, "token_join");
  const auto& corpus = r.at(j, "corpus");
  id.corpus_path = r.string(corpus, "path");
  id.corpus_bytes = static_cast<uint64_t>(r.integer(corpus, "bytes", 1));
  id.lines = r.integer_in(corpus, "lines", 1, int64_t(id.corpus_bytes), "\"corpus\": ",
                          "a line of the corpus file holds at least one of its " +
                              std::to_string(id.corpus_bytes) + " bytes");
  id.documents = r.integer_in(corpus, "documents", 1, id.lines, "\"corpus\": ",
                              "the documents are the non-empty lines of the file");
  id.corpus_fingerprint = r.string(corpus, "fingerprint");
  const auto& settings = r.at(j, "settings");
  id.settings.top = r.integer_in(settings, "top", 1, kMaxCorpusTop, "\"settings\": ",
                                 "--top keeps from 1 to " + std::to_string(kMaxCorpusTop) +
                                     " links per head");
  id.settings.max_tokens = r.integer(settings, "max_tokens", 0);
  id.settings.exclude_self = r.boolean(settings, "exclude_self");
  id.token_limit = r.integer_in(settings, "token_limit", 1, kMaxPositions, "\"settings\": ",
                                "no model takes more than " + std::to_string(kMaxPositions) +
                                    " positions");
  return id;
}

// The [layer rows, heads] tables of each map family (head_statistics_families) are sized by
// the largest layer and head numbers "heads" lists; a run lists every head of every layer it
// measured, so tables more than half empty are no run's and would only fill memory.
void check_head_tables(const ManifestReader& r, const CorpusAccumulator& s) {
  std::map<std::string, std::pair<int64_t, int64_t>> extent;  // family -> (rows, heads)
  for (const auto& [key, row] : s.heads) {
    auto& [rows, heads] = extent[key.stack + "." + key.sublayer + "." + std::to_string(key.segment)];
    rows = std::max(rows, map_layer_row(key) + 1);
    heads = std::max(heads, key.head + 1);
  }
  int64_t cells = 0;  // at most 1024 x 1024 per family and one family per entry: no overflow
  for (const auto& [family, e] : extent) cells += e.first * e.second;
  if (cells > 2 * int64_t(s.heads.size()))
    r.fail("\"heads\" lists " + std::to_string(s.heads.size()) +
           " heads, but their layer and head numbers span tables of " + std::to_string(cells) +
           " heads; a corpus run lists every head of every layer it measured");
}

void read_state(const ManifestReader& r, const nlohmann::json& j, CorpusIndex& index) {
  CorpusAccumulator& s = index.state;
  const CorpusIdentity& id = index.identity;
  const auto& progress = r.at(j, "progress");
  index.next_line = r.integer(progress, "next_line", 0);
  s.measured = r.integer_in(progress, "measured", 0, index.shard_documents, "\"progress\": ",
                            "the shards hold " + std::to_string(index.shard_documents) +
                                " documents");
  int64_t k = 0;
  for (const auto& skip : r.array(j, "skipped")) {
    const std::string where = "\"skipped\" entry " + std::to_string(k++) + ": ";
    const int64_t document =
        r.integer_in(skip, "document", 0, id.lines - 1, where,
                     "a line of the corpus file, which has " + std::to_string(id.lines));
    if (!s.skipped.empty() && document <= s.skipped.back().document)
      r.fail(where + "document " + std::to_string(document) +
             " is not after the one before: \"skipped\" lists each document once, in order");
    s.skipped.push_back({document, r.string(skip, "reason")});
  }
  if (int64_t(s.skipped.size()) != r.integer(progress, "skipped", 0))
    r.fail("\"progress\" counts " + std::to_string(r.integer(progress, "skipped", 0)) +
           " skipped documents, \"skipped\" lists " + std::to_string(s.skipped.size()));
  k = 0;
  for (const auto& h : r.array(j, "heads")) {
    const std::string where = "\"heads\" entry " + std::to_string(k++) + ": ";
    CorpusHeadRow row;
    row.documents = r.integer_in(h, "documents", 1, std::max<int64_t>(s.measured, 1), where,
                                 "documents measured: " + std::to_string(s.measured));
    const auto& sums = r.at(h, "sums");
    for (int st = 0; st < kHeadStatisticCount; ++st)
      row.sums[st] =
          ExactSum::parse(r.string(sums, head_statistic_name(HeadStatistic(st))), r.origin);
    if (!s.heads.emplace(r.map_head_of(h, where, id.token_limit), row).second)
      r.fail("\"heads\" lists " + r.string(h, "map") + " head " +
             std::to_string(r.integer(h, "head")) + " twice");
  }
  check_head_tables(r, s);
  k = 0;
  for (const auto& l : r.array(j, "links")) {
    const std::string where = "\"links\" entry " + std::to_string(k++) + ": ";
    CorpusLinkList list;
    list.side = r.side(l);
    const auto& links = r.array(l, "links");
    if (int64_t(links.size()) > id.settings.top)
      r.fail(where + "holds " + std::to_string(links.size()) + " links, more than --top " +
             std::to_string(id.settings.top));
    for (const auto& e : links) {
      // [document, query, key, weight]: a line of the corpus, two positions, a weight a float
      // holds (the conversion of a larger double is undefined).
      auto index_in = [&](size_t i, int64_t end) {
        return e[i].is_number_integer() && !(e[i].is_number_unsigned() && e[i].get<uint64_t>() >= uint64_t(end)) &&
               e[i].get<int64_t>() >= 0 && e[i].get<int64_t>() < end;
      };
      if (!e.is_array() || e.size() != 4 || !index_in(0, id.lines) ||
          !index_in(1, kMaxPositions) || !index_in(2, kMaxPositions) || !e[3].is_number() ||
          !(e[3].get<double>() > 0 && e[3].get<double>() <= FLT_MAX))
        r.fail(where + "a link of " + r.string(l, "map") +
               " is not [document, query, key, weight] with a document below " +
               std::to_string(id.lines) + ", positions below " + std::to_string(kMaxPositions) +
               " and a weight above 0");
      list.links.push_back(
          {e[0].get<int64_t>(), e[1].get<int64_t>(), e[2].get<int64_t>(), e[3].get<float>()});
    }
    if (!std::is_sorted(list.links.begin(), list.links.end(), better_link))
      r.fail("the links of " + r.string(l, "map") + " are not the best-first top " +
             std::to_string(id.settings.top));
    if (!s.links.emplace(r.map_head_of(l, where, id.token_limit), std::move(list)).second)
      r.fail("\"links\" lists " + r.string(l, "map") + " twice");
  }
}

void read_documents(const std::string& path, CorpusAccumulator& s) {
  const std::set<int64_t> wanted = s.referenced_documents();
  if (!fs::exists(path)) {
    if (wanted.empty()) return;
    throw AtlasError(path + ": no such file, but the manifest's links point into " +
                     std::to_string(wanted.size()) + " documents");
  }
  MappedFile file(path, "a documents.jsonl file");
  const auto* data = reinterpret_cast<const char*>(file.data());
  size_t begin = 0;
  int64_t line = 0;
  while (begin < file.size()) {
    size_t end = begin;
    while (end < file.size() && data[end] != '\n') ++end;
    ++line;
    const std::string origin = path + " line " + std::to_string(line);
    const ManifestReader r{origin};
    const nlohmann::json j = parse_json_text(std::string_view(data + begin, end - begin), origin);
    const int64_t id = r.integer(j, "document", 0);
    if (wanted.count(id)) {
      CorpusDocumentTokens doc;
      doc.text = r.string(j, "text");
      for (const char* side : {"source", "target"})
        for (const auto& label : r.array(j, side)) {
          if (!label.is_string())
            r.fail(std::string("a token of \"") + side + "\" is not a string");
          (side[0] == 's' ? doc.source : doc.target).push_back(label.get<std::string>());
        }
      s.documents[id] = std::move(doc);
    }
    begin = end + 1;
  }
  for (int64_t id : wanted)
    if (!s.documents.count(id))
      throw AtlasError(path + ": document " + std::to_string(id) +
                       " is missing, but links of the manifest point into it");
  for (const auto& [key, list] : s.links)
    for (const CorpusLink& l : list.links) {
      const CorpusDocumentTokens& doc = s.documents[l.document];
      const int64_t n = int64_t((list.side == TokenSide::Source ? doc.source : doc.target).size());
      if (l.query >= n || l.key >= n)
        throw AtlasError(path + ": document " + std::to_string(l.document) + " has " +
                         std::to_string(n) + " tokens, but a link of " + map_name(key) +
                         " points to position " + std::to_string(std::max(l.query, l.key)));
    }
}

}  // namespace

bool is_corpus_folder_entry(const std::string& name) {
  return name == "manifest.json" || name == "documents.jsonl" || name == "heads.csv" ||
         name == "links.csv" || name == "heads";
}

std::string encode_manifest(const CorpusIndex& index) {
  const CorpusIdentity& id = index.identity;
  const CorpusAccumulator& s = index.state;
  // One key per line; the long arrays one element per line, so the file reads and diffs well.
  std::string out = "{\n";
  auto field = [&](const char* key, const ojson& v) {
    out += std::string("  \"") + key + "\": " + dump(v) + ",\n";
  };
  auto rows = [&](const char* key, const std::vector<ojson>& items, bool last) {
    out += std::string("  \"") + key + "\": [";
    for (size_t i = 0; i < items.size(); ++i) out += (i ? ",\n    " : "\n    ") + dump(items[i]);
    out += items.empty() ? "]" : "\n  ]";
    out += last ? "\n" : ",\n";
  };
  field("format", kFormat);
  field("version", kVersion);
  field("model", {{"argument", id.model_argument},
                  {"name", id.model_name},
                  {"fingerprint", id.model_fingerprint},
                  {"token_join", id.token_join}});
  field("corpus", {{"path", id.corpus_path},
                   {"bytes", id.corpus_bytes},
                   {"lines", id.lines},
                   {"documents", id.documents},
                   {"fingerprint", id.corpus_fingerprint}});
  field("settings", {{"top", id.settings.top},
                     {"max_tokens", id.settings.max_tokens},
                     {"exclude_self", id.settings.exclude_self},
                     {"token_limit", id.token_limit}});
  field("shards", {{"count", index.shard_count},
                   {"covered", index.shards},
                   {"documents", index.shard_documents}});
  field("progress", {{"next_line", index.next_line},
                     {"measured", s.measured},
                     {"skipped", s.skipped.size()},
                     {"finished", index.finished()},
                     {"complete", index.complete()}});
  std::vector<ojson> items;
  for (const CorpusSkip& k : s.skipped)
    items.push_back({{"document", k.document}, {"reason", k.reason}});
  rows("skipped", items, false);
  items.clear();
  for (const auto& [key, row] : s.heads) {
    ojson h = map_fields(key);
    h["documents"] = row.documents;
    ojson sums = ojson::object();
    for (int st = 0; st < kHeadStatisticCount; ++st)
      sums[head_statistic_name(HeadStatistic(st))] = row.sums[st].to_string();
    h["sums"] = sums;
    items.push_back(std::move(h));
  }
  rows("heads", items, false);
  items.clear();
  for (const auto& [key, list] : s.links) {
    ojson l = map_fields(key);
    l["side"] = side_name(list.side);
    ojson links = ojson::array();
    for (const CorpusLink& k : list.links)
      links.push_back({k.document, k.query, k.key, double(k.weight)});
    l["links"] = links;
    items.push_back(std::move(l));
  }
  rows("links", items, true);
  return out + "}\n";
}

std::string encode_documents(const CorpusAccumulator& state) {
  std::string out;
  for (const auto& [id, doc] : state.documents)
    out += dump({{"document", id},
                 {"text", doc.text},
                 {"source", doc.source},
                 {"target", doc.target}}) +
           "\n";
  return out;
}

CorpusIndex read_corpus_folder(const std::string& dir) {
  const std::string path = (fs::path(dir) / "manifest.json").string();
  const nlohmann::json j = parse_json_text(read_input_file(path, InputKind::DumpManifest), path);
  const ManifestReader r{path};
  if (!j.is_object() || !j.contains("format") || j["format"] != kFormat)
    r.fail("not the manifest of a corpus run (its \"format\" is not \"atlas-corpus\")");
  if (r.integer(j, "version") != kVersion)
    r.fail("corpus format version " + std::to_string(r.integer(j, "version")) +
           "; this atlas reads version " + std::to_string(kVersion));
  CorpusIndex index;
  index.identity = read_identity(r, j);
  const auto& shards = r.at(j, "shards");
  index.shard_count = r.integer_in(shards, "count", 1, kMaxCorpusShards, "\"shards\": ",
                                   "--shard K/N takes N from 1 to " +
                                       std::to_string(kMaxCorpusShards));
  index.shards.clear();
  for (const auto& k : r.array(shards, "covered")) {
    if (!k.is_number_integer() || k.get<int64_t>() < 0 || k.get<int64_t>() >= index.shard_count ||
        (!index.shards.empty() && k.get<int64_t>() <= index.shards.back()))
      r.fail("\"shards\": \"covered\" must list shard indices below \"count\" in increasing order");
    index.shards.push_back(k.get<int64_t>());
  }
  if (index.shards.empty()) r.fail("\"shards\": \"covered\" is empty");
  index.shard_documents = r.integer_in(shards, "documents", 0, index.identity.documents,
                                      "\"shards\": ", "the corpus holds " +
                                          std::to_string(index.identity.documents) + " documents");
  read_state(r, j, index);
  if (index.documents_done() > index.shard_documents || index.next_line > index.identity.lines)
    r.fail("\"progress\" counts more than the shards hold");
  read_documents((fs::path(dir) / "documents.jsonl").string(), index.state);
  return index;
}

void commit_corpus_checkpoint(const std::string& dir, CorpusIndex& index) {
  fs::create_directories(dir);
  const std::string documents = (fs::path(dir) / "documents.jsonl").string();
  write_file_atomically(documents, encode_documents(index.state));  // the old and new documents
  write_file_atomically((fs::path(dir) / "manifest.json").string(), encode_manifest(index));
  if (index.state.drop_unreferenced_documents())
    write_file_atomically(documents, encode_documents(index.state));
}

void remove_corpus_views(const std::string& dir) {
  for (const char* name : {"heads.csv", "links.csv", "heads"}) fs::remove_all(fs::path(dir) / name);
}

}  // namespace atlas
