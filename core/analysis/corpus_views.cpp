// The views of a corpus folder (corpus_store.h): heads.csv, heads/<family>.<statistic>.npy and
// links.csv, written from the accumulated state. Numbers are written in their shortest form
// that reads back to the same float or double, so equal states give equal bytes.
#include <charconv>
#include <filesystem>

#include "core/analysis/corpus_store.h"
#include "core/formats/atomic_file.h"
#include "core/formats/npy.h"

namespace atlas {

namespace fs = std::filesystem;

namespace {

template <class T>
std::string shortest(T v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

// RFC 4180: a field with a comma, quote or line break is quoted, its quotes doubled.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string map_columns(const MapHead& k) {
  return map_name(k) + "," + k.stack + "," + k.sublayer + "," + std::to_string(k.layer) + "," +
         std::to_string(k.segment) + "," + std::to_string(k.step) + "," + std::to_string(k.head);
}

std::string heads_csv(const CorpusAccumulator& s) {
  std::string out = "map,stack,sublayer,layer,segment,step,head,documents";
  for (int st = 0; st < kHeadStatisticCount; ++st)
    out += std::string(",") + head_statistic_name(HeadStatistic(st));
  out += "\n";
  for (const auto& [key, row] : s.heads) {
    out += map_columns(key) + "," + std::to_string(row.documents);
    for (int st = 0; st < kHeadStatisticCount; ++st) out += "," + shortest(row.mean(st));
    out += "\n";
  }
  return out;
}

std::string links_csv(const CorpusAccumulator& s) {
  std::string out =
      "map,stack,sublayer,layer,segment,step,head,rank,document,query,key,query_token,key_token,"
      "weight\n";
  for (const auto& [key, list] : s.links)
    for (size_t rank = 0; rank < list.links.size(); ++rank) {
      const CorpusLink& l = list.links[rank];
      const CorpusDocumentTokens& doc = s.documents.at(l.document);
      const auto& tokens = list.side == TokenSide::Source ? doc.source : doc.target;
      out += map_columns(key) + "," + std::to_string(rank + 1) + "," + std::to_string(l.document) +
             "," + std::to_string(l.query) + "," + std::to_string(l.key) + "," +
             csv_field(tokens[size_t(l.query)]) + "," + csv_field(tokens[size_t(l.key)]) + "," +
             shortest(l.weight) + "\n";
    }
  return out;
}

// One [layers, heads] float32 table per map family and statistic, as `atlas heads --npy`.
void write_head_tables(const fs::path& folder, const CorpusAccumulator& s) {
  std::vector<HeadStatisticsRow> rows;
  for (const auto& [key, row] : s.heads) {
    HeadStatisticsRow r;
    r.map = map_of(key);
    r.head = key.head;
    for (int st = 0; st < kHeadStatisticCount; ++st) r.value[st] = row.mean(st);
    rows.push_back(std::move(r));
  }
  fs::create_directories(folder);
  for (const HeadStatisticsFamily& f : head_statistics_families(rows))
    for (int st = 0; st < kHeadStatisticCount; ++st) {
      Tensor t({f.layers, f.heads});
      for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = static_cast<float>(f.table[st][i]);
      write_npy(
          (folder / (f.name + "." + head_statistic_name(HeadStatistic(st)) + ".npy")).string(), t,
          DType::F32);
    }
}

}  // namespace

void write_corpus_views(const std::string& dir, const CorpusIndex& index) {
  write_file_atomically((fs::path(dir) / "heads.csv").string(), heads_csv(index.state));
  write_head_tables(fs::path(dir) / "heads", index.state);
  write_file_atomically((fs::path(dir) / "links.csv").string(), links_csv(index.state));
}

}  // namespace atlas
