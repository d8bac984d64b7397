// A corpus folder on disk (corpus_store.h): the manifest and documents.jsonl, read and written.
// The views (heads.csv, heads/*.npy, links.csv) are in corpus_views.cpp.
#include "core/analysis/corpus_store.h"

#include <filesystem>
#include <nlohmann/json.hpp>

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
    if (!v.is_number_integer() || v.get<int64_t>() < lo)
      fail(std::string("\"") + key + "\" is not an integer" +
           (lo == 0   ? " >= 0"
            : lo == 1 ? " >= 1"
                      : ""));
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
  MapHead map_head_of(const nlohmann::json& j) const {
    AttentionMap m;
    m.stack = string(j, "stack");
    m.sublayer = string(j, "sublayer");
    m.segment = integer(j, "segment", -1);
    m.step = integer(j, "step", -1);
    m.layer = integer(j, "layer", 0);
    return map_head(m, integer(j, "head", 0));
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
  id.lines = r.integer(corpus, "lines", 1);
  id.documents = r.integer(corpus, "documents", 1);
  id.corpus_fingerprint = r.string(corpus, "fingerprint");
  const auto& settings = r.at(j, "settings");
  id.settings.top = r.integer(settings, "top", 1);
  id.settings.max_tokens = r.integer(settings, "max_tokens", 0);
  id.settings.exclude_self = r.boolean(settings, "exclude_self");
  id.token_limit = r.integer(settings, "token_limit", 1);
  return id;
}

void read_state(const ManifestReader& r, const nlohmann::json& j, CorpusIndex& index) {
  CorpusAccumulator& s = index.state;
  const auto& progress = r.at(j, "progress");
  index.next_line = r.integer(progress, "next_line", 0);
  s.measured = r.integer(progress, "measured", 0);
  for (const auto& k : r.array(j, "skipped"))
    s.add_skip(r.integer(k, "document", 0), r.string(k, "reason"));
  if (int64_t(s.skipped.size()) != r.integer(progress, "skipped", 0))
    r.fail("\"progress\" counts " + std::to_string(r.integer(progress, "skipped", 0)) +
           " skipped documents, \"skipped\" lists " + std::to_string(s.skipped.size()));
  for (const auto& h : r.array(j, "heads")) {
    CorpusHeadRow row;
    row.documents = r.integer(h, "documents", 1);
    const auto& sums = r.at(h, "sums");
    for (int st = 0; st < kHeadStatisticCount; ++st)
      row.sums[st] =
          ExactSum::parse(r.string(sums, head_statistic_name(HeadStatistic(st))), r.origin);
    if (!s.heads.emplace(r.map_head_of(h), row).second)
      r.fail("\"heads\" lists " + r.string(h, "map") + " head " +
             std::to_string(r.integer(h, "head")) + " twice");
  }
  for (const auto& l : r.array(j, "links")) {
    CorpusLinkList list;
    list.side = r.side(l);
    for (const auto& e : r.array(l, "links")) {
      if (!e.is_array() || e.size() != 4 || !e[0].is_number_integer() ||
          !e[1].is_number_integer() || !e[2].is_number_integer() || !e[3].is_number() ||
          e[0].get<int64_t>() < 0 || e[1].get<int64_t>() < 0 || e[2].get<int64_t>() < 0)
        r.fail("a link of " + r.string(l, "map") + " is not [document, query, key, weight]");
      list.links.push_back(
          {e[0].get<int64_t>(), e[1].get<int64_t>(), e[2].get<int64_t>(), e[3].get<float>()});
    }
    if (!std::is_sorted(list.links.begin(), list.links.end(), better_link) ||
        int64_t(list.links.size()) > index.identity.settings.top)
      r.fail("the links of " + r.string(l, "map") + " are not the best-first top " +
             std::to_string(index.identity.settings.top));
    if (!s.links.emplace(r.map_head_of(l), std::move(list)).second)
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
  index.shard_count = r.integer(shards, "count", 1);
  index.shards.clear();
  for (const auto& k : r.array(shards, "covered")) {
    if (!k.is_number_integer() || k.get<int64_t>() < 0 || k.get<int64_t>() >= index.shard_count ||
        (!index.shards.empty() && k.get<int64_t>() <= index.shards.back()))
      r.fail("\"shards\": \"covered\" must list shard indices below \"count\" in increasing order");
    index.shards.push_back(k.get<int64_t>());
  }
  if (index.shards.empty()) r.fail("\"shards\": \"covered\" is empty");
  index.shard_documents = r.integer(shards, "documents", 0);
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
