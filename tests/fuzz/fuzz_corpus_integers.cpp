// libFuzzer target for the integer fields of a corpus run's manifest (core/analysis/
// corpus_store.h): a valid manifest of 2 layers x 2 heads with links into 3 documents is built
// here, and the fuzzer's bytes replace its integers one by one (8 bytes each, or a tag byte
// choosing an edge value: 0, -1, 2^28, 2^62, INT64_MAX, INT64_MIN, the value +-1), so it
// explores numbers rather than JSON syntax. What reads must then write its views (heads.csv,
// heads/*.npy sized [layers, heads] by those numbers, links.csv) and answer a query, within
// libFuzzer's memory limit: a layer or head number that sizes a table must have been refused.
// Any exception but atlas::AtlasError, crash, sanitizer report or memory blow-up is a bug.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "core/analysis/corpus_query.h"
#include "core/analysis/corpus_store.h"
#include "core/tensor/error.h"

namespace {

atlas::CorpusIndex template_index() {
  atlas::CorpusIndex index;
  atlas::CorpusIdentity& id = index.identity;
  id.model_argument = id.model_name = "demo:induction";
  id.model_fingerprint = id.corpus_fingerprint = "fnv1a64:0000000000000000";
  id.corpus_path = "corpus.txt";
  id.corpus_bytes = 40;
  id.lines = 4;
  id.documents = 3;
  id.settings.top = 3;
  id.token_limit = 16;
  index.shard_documents = 3;
  index.next_line = 4;
  index.state.measured = 3;
  for (int64_t layer = 0; layer < 2; ++layer)
    for (int64_t head = 0; head < 2; ++head) {
      atlas::MapHead k{1, "decoder", "self_attn", -1, -1, layer, head};
      atlas::CorpusHeadRow& row = index.state.heads[k];
      row.documents = 3;
      for (auto& s : row.sums) s.add(0.25 * double(layer + head + 1));
      index.state.links[k].links = {{0, 2, 1, 0.75f}, {2, 3, 0, 0.5f}};
    }
  for (int64_t d : {0, 2})
    index.state.documents[d] = {"abcd", {"a", "b", "c", "d"}, {}};
  return index;
}

// Every integer leaf of the manifest, in document order.
void integer_leaves(nlohmann::ordered_json& j, std::vector<nlohmann::ordered_json*>& out) {
  if (j.is_number_integer()) out.push_back(&j);
  if (j.is_structured())
    for (auto& child : j) integer_leaves(child, out);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const atlas::CorpusIndex base = template_index();
  static const std::string documents = atlas::encode_documents(base.state);
  static const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                           ("atlas-fuzz-corpus-int-" + std::to_string(::getpid()));
  nlohmann::ordered_json m = nlohmann::ordered_json::parse(atlas::encode_manifest(base));
  std::vector<nlohmann::ordered_json*> leaves;
  integer_leaves(m, leaves);
  size_t at = 0;
  for (nlohmann::ordered_json* leaf : leaves) {
    if (at >= size) break;
    const int64_t old = leaf->get<int64_t>();
    const uint8_t tag = data[at++];
    const int64_t edges[] = {old,       0,         -1,
                             int64_t(1) << 28,      int64_t(1) << 62,
                             std::numeric_limits<int64_t>::max(),
                             std::numeric_limits<int64_t>::min(), old + 1, old - 1};
    if (tag < 9 * 16) {
      *leaf = edges[tag % 9];
    } else if (size - at >= 8) {
      int64_t v;
      std::memcpy(&v, data + at, 8);
      at += 8;
      *leaf = v;
    }
  }
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "manifest.json", std::ios::binary) << m.dump();
  std::ofstream(dir / "documents.jsonl", std::ios::binary) << documents;
  try {
    const atlas::CorpusIndex index = atlas::read_corpus_folder(dir.string());
    atlas::write_corpus_views(dir.string(), index);
    volatile size_t sink = atlas::find_corpus_links(index, {}).size();
    (void)sink;
  } catch (const atlas::AtlasError&) {
  }
  return 0;
}
