// Corpus mode (core/analysis/corpus_index.h) against oracles computed here: the head
// statistics are the mean over documents of head_statistics() run per document by the test;
// the links are the top K of a naive scan of every map of every document; two shards merged,
// and a run cancelled and resumed, write the same bytes as one uninterrupted run; bad input
// is refused by name.
#include <unistd.h>
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "core/analysis/corpus_index.h"
#include "core/analysis/head_statistics.h"
#include "core/formats/model_io.h"
#include "core/formats/npy.h"
#include "core/tensor/error.h"
#include "core/tensor/random.h"
#include "tests/core/preset_test_util.h"

using namespace atlas;
namespace fs = std::filesystem;

namespace {

fs::path corpus_dir(const std::string& name) {
  const fs::path d =
      fs::temp_directory_path() / ("atlas-corpus-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// A fresh scratch folder, removed with everything in it when the test ends.
struct ScratchDir : fs::path {
  explicit ScratchDir(const std::string& name) : fs::path(corpus_dir(name)) {}
  ScratchDir(const ScratchDir&) = delete;
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(*this, ec);
  }
};

void write_text(const fs::path& p, const std::string& s) {
  std::ofstream(p, std::ios::binary) << s;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Every file under `dir`, by relative path: what "byte-identical folders" compares.
std::map<std::string, std::string> folder_bytes(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) out[fs::relative(e.path(), dir).string()] = read_text(e.path());
  return out;
}

// Lines of a-z for demo:induction (chars a-z): repeated random strings (where its induction
// heads fire), plain random strings, empty lines (no document, but they count as lines) and a
// Windows line ending.
std::vector<std::string> induction_lines() {
  Rng rng(11);
  auto word = [&](int n) {
    std::string s;
    for (int i = 0; i < n; ++i) s += char('a' + rng.next() % 26);
    return s;
  };
  std::vector<std::string> lines;
  for (int i = 0; i < 14; ++i) {
    if (i % 5 == 3) {
      lines.push_back("");
      continue;
    }
    const std::string w = word(3 + int(rng.next() % 8));
    lines.push_back(i % 2 ? w + w : w + word(4));
  }
  lines.push_back("q");  // one token: no row with two keys, so no link
  return lines;
}

std::string join_lines(const std::vector<std::string>& lines) {
  std::string s;
  for (size_t i = 0; i < lines.size(); ++i) s += lines[i] + (i == 2 ? "\r\n" : "\n");
  return s;
}

RunOptions attention_only() {
  RunOptions o;
  o.trace = TraceOptions::none();
  o.trace.attention = true;
  return o;
}

CorpusRunOptions run_options(const fs::path& corpus, const fs::path& out, int64_t top,
                             bool exclude_self = false) {
  CorpusRunOptions o;
  o.model_argument = "demo:induction";
  o.corpus_path = corpus.string();
  o.out_dir = out.string();
  o.settings.top = top;
  o.settings.exclude_self = exclude_self;
  return o;
}

struct Candidate {
  float weight;
  int64_t document, query, key;
};

// The weights of head h of map m as a dense [Lq, Lk] matrix, zeros where a CSR map stores none.
std::vector<float> dense_head(const Trace& t, const AttentionMap& m, int64_t h) {
  const int64_t lq = m.queries.count, lk = m.keys.count;
  std::vector<float> p(size_t(lq * lk), 0.0f);
  if (m.dense) {
    const Tensor& a = t.find(m.array)->tensor;
    std::copy_n(a.data.begin() + h * lq * lk, lq * lk, p.begin());
    return p;
  }
  const Tensor& indptr = t.find(m.array + ".indptr")->tensor;
  const Tensor& indices = t.find(m.array + ".indices")->tensor;
  const Tensor& values = t.find(m.array + ".values")->tensor;
  for (int64_t i = 0; i < lq; ++i)
    for (auto k = int64_t(indptr.data[size_t(i)]); k < int64_t(indptr.data[size_t(i + 1)]); ++k)
      p[size_t(i * lk + int64_t(indices.data[size_t(k)]))] =
          values.data[size_t(h * indices.numel() + k)];
  return p;
}

}  // namespace

TEST_CASE("corpus head statistics are the mean over documents of each document's head statistics",
          "[corpus]") {
  const Model model = load_model("demo:induction");
  const ScratchDir dir("stats");
  const auto lines = induction_lines();
  write_text(dir / "corpus.txt", join_lines(lines));
  const CorpusRunResult r = run_corpus(model, run_options(dir / "corpus.txt", dir / "out", 10));
  CHECK(r.finished);
  CHECK(r.skipped == 0);

  std::map<std::pair<std::string, int64_t>, std::pair<std::vector<double>, int64_t>>
      oracle;  // sums, documents
  std::map<std::string, std::string> family_of;
  int64_t documents = 0;
  for (const std::string& line : lines) {
    if (line.empty()) continue;
    ++documents;
    const RunResult run = model.run(line, "", attention_only());
    for (const HeadStatisticsRow& row : head_statistics(run.trace)) {
      auto& [sums, n] = oracle[{attention_array_name(row.map), row.head}];
      sums.resize(kHeadStatisticCount);
      for (int s = 0; s < kHeadStatisticCount; ++s) sums[size_t(s)] += row.value[s];
      ++n;
      family_of[attention_array_name(row.map)] = row.map.stack + "." + row.map.sublayer;
    }
  }
  CHECK(r.measured == documents);
  const CorpusIndex index = read_corpus_folder((dir / "out").string());
  REQUIRE(index.state.heads.size() == oracle.size());
  for (const auto& [key, row] : index.state.heads) {
    const auto& [sums, n] = oracle.at({map_name(key), key.head});
    CHECK(row.documents == n);
    for (int s = 0; s < kHeadStatisticCount; ++s)
      CHECK(row.mean(s) == Approx(sums[size_t(s)] / double(n)).epsilon(1e-12).margin(1e-15));
    // The .npy table of the family holds the same mean at [layer, head].
    const Tensor t = read_npy(
        (dir / "out" / "heads" / (family_of.at(map_name(key)) + ".induction.npy")).string());
    const auto i = HeadStatistic::Induction;
    CHECK(t.data[size_t(key.layer * t.shape[1] + key.head)] == float(row.mean(int(i))));
  }
}

TEST_CASE("corpus links are the top K of a naive scan of every map of every document", "[corpus]") {
  auto check_links = [](const Model& model, const std::string& argument,
                        const std::vector<std::string>& lines, int64_t top, bool exclude_self,
                        const std::string& name) {
    const ScratchDir dir(name);
    write_text(dir / "corpus.txt", join_lines(lines));
    CorpusRunOptions o = run_options(dir / "corpus.txt", dir / "out", top, exclude_self);
    o.model_argument = argument;
    REQUIRE(run_corpus(model, o).finished);

    std::map<std::pair<std::string, int64_t>, std::vector<Candidate>> all;
    std::map<int64_t, std::vector<std::string>> labels;
    for (size_t id = 0; id < lines.size(); ++id) {
      if (lines[id].empty()) continue;
      const RunResult run = model.run(lines[id], "", attention_only());
      for (const TokenInfo& t : run.trace.source_tokens) labels[int64_t(id)].push_back(t.label);
      for (const AttentionMap& m : run.trace.attention_maps) {
        if (!head_statistics_apply(m)) continue;
        for (int64_t h = 0; h < m.heads; ++h) {
          const std::vector<float> p = dense_head(run.trace, m, h);
          auto& list = all[{attention_array_name(m), h}];
          for (int64_t i = 0; i < m.queries.count; ++i) {
            int positive = 0;
            for (int64_t j = 0; j < m.keys.count; ++j)
              positive += p[size_t(i * m.keys.count + j)] > 0;
            if (positive < 2) continue;  // a query with one key: weight 1 by construction
            for (int64_t j = 0; j < m.keys.count; ++j) {
              const float w = p[size_t(i * m.keys.count + j)];
              const int64_t q = m.queries.begin + i, k = m.keys.begin + j;
              if (w > 0 && !(exclude_self && q == k)) list.push_back({w, int64_t(id), q, k});
            }
          }
        }
      }
    }
    const CorpusIndex index = read_corpus_folder((dir / "out").string());
    REQUIRE(index.state.links.size() == all.size());
    for (auto& entry : all) {  // not a structured binding: clang cannot capture one in a lambda
      const auto& where = entry.first;
      auto& list = entry.second;
      std::sort(list.begin(), list.end(), [](const Candidate& a, const Candidate& b) {
        return std::tie(b.weight, a.document, a.query, a.key) <
               std::tie(a.weight, b.document, b.query, b.key);
      });
      if (int64_t(list.size()) > top) list.resize(size_t(top));
      const auto found =
          std::find_if(index.state.links.begin(), index.state.links.end(), [&](const auto& e) {
            return map_name(e.first) == where.first && e.first.head == where.second;
          });
      REQUIRE(found != index.state.links.end());
      const auto& got = found->second.links;
      REQUIRE(got.size() == list.size());
      for (size_t n = 0; n < got.size(); ++n) {
        CHECK(got[n].weight == list[n].weight);
        CHECK(got[n].document == list[n].document);
        CHECK(got[n].query == list[n].query);
        CHECK(got[n].key == list[n].key);
        if (exclude_self) CHECK(got[n].query != got[n].key);
      }
    }
    // links.csv names the tokens of the documents: the first row of the first list.
    const auto& [first_key, first_list] = *index.state.links.begin();
    REQUIRE_FALSE(first_list.links.empty());
    const CorpusLink& l = first_list.links.front();
    const std::string query_label = labels[l.document][size_t(l.query)],
                      key_label = labels[l.document][size_t(l.key)];
    if ((query_label + key_label).find_first_of(",\"") == std::string::npos) {
      std::string csv = read_text(dir / "out" / "links.csv");
      const std::string row =
          csv.substr(csv.find('\n') + 1, csv.find('\n', csv.find('\n') + 1) - csv.find('\n') - 1);
      CHECK(row.find(map_name(first_key) + ",") == 0);
      CHECK(row.find("," + query_label + "," + key_label + ",") != std::string::npos);
    }
  };
  const Model induction = load_model("demo:induction");
  SECTION("with self links, few kept (ties at the bottom of a list)") {
    check_links(induction, "demo:induction", induction_lines(), 3, false, "links-self");
  }
  SECTION("without self links") {
    check_links(induction, "demo:induction", induction_lines(), 25, true, "links-noself");
  }
  SECTION("a sparse model's CSR maps") {
    const ModelConfig c = preset_test::small_preset_config("tiny-sparse-strided");
    const Model sparse(c, init_params(c, 3));
    check_links(sparse, "preset:tiny-sparse-strided",
                {"hello there", "", "sparse attention, strided", "ab"}, 7, false, "links-csr");
  }
}

TEST_CASE("a corpus split into shards and merged writes the same bytes as one run", "[corpus]") {
  const Model model = load_model("demo:induction");
  const ScratchDir dir("shards");
  write_text(dir / "corpus.txt", join_lines(induction_lines()));
  const CorpusRunOptions whole = run_options(dir / "corpus.txt", dir / "whole", 4);
  run_corpus(model, whole);
  const auto expected = folder_bytes(dir / "whole");
  REQUIRE(expected.count("manifest.json"));
  REQUIRE(expected.count("links.csv"));
  REQUIRE(expected.count("heads.csv"));

  for (int64_t n : {2, 3}) {
    std::vector<std::string> shards;
    for (int64_t k = 0; k < n; ++k) {
      CorpusRunOptions o = whole;
      o.shard = {k, n};
      o.out_dir = (dir / ("shard" + std::to_string(k) + "of" + std::to_string(n))).string();
      CHECK(run_corpus(model, o).finished);
      shards.push_back(o.out_dir);
    }
    SECTION("all shards at once, " + std::to_string(n) + " of them") {
      merge_corpus((dir / ("merged" + std::to_string(n))).string(), shards, false);
      CHECK(folder_bytes(dir / ("merged" + std::to_string(n))) == expected);
    }
    SECTION("in reverse order, " + std::to_string(n)) {
      std::reverse(shards.begin(), shards.end());
      merge_corpus((dir / ("reversed" + std::to_string(n))).string(), shards, false);
      CHECK(folder_bytes(dir / ("reversed" + std::to_string(n))) == expected);
    }
    SECTION("a partial merge, then the rest merged into it, " + std::to_string(n)) {
      const fs::path part_dir = dir / ("part" + std::to_string(n)),
                     merged = dir / ("joined" + std::to_string(n));
      const CorpusMergeResult part = merge_corpus(part_dir.string(), {shards.front()}, true);
      CHECK_FALSE(part.complete);
      CHECK(int64_t(part.missing_shards.size()) == n - 1);
      std::vector<std::string> rest = {part_dir.string()};
      rest.insert(rest.end(), shards.begin() + 1, shards.end());
      CHECK(merge_corpus(merged.string(), rest, false).complete);
      CHECK(folder_bytes(merged) == expected);
    }
  }
}

TEST_CASE("Transformer-XL shards, whose segment maps differ between documents, merge exactly",
          "[corpus]") {
  const ModelConfig c = preset_test::small_preset_config("tiny-xl");
  const Model model(c, init_params(c, 5));
  const ScratchDir dir("xl");
  // Segments of 16 bytes: the long lines have a seg1 and seg2, the short ones only seg0.
  write_text(dir / "corpus.txt",
             "a short one\nthis line is long enough for three segments of XL\n\nmid-sized line "
             "here\nx y\n");
  CorpusRunOptions o = run_options(dir / "corpus.txt", dir / "whole", 5);
  o.model_argument = "preset:tiny-xl";
  run_corpus(model, o);
  const CorpusIndex whole = read_corpus_folder((dir / "whole").string());
  std::map<std::string, int64_t> documents_of;  // a map's documents
  for (const auto& [key, row] : whole.state.heads) documents_of[map_name(key)] = row.documents;
  CHECK(documents_of.at("decoder.seg0.layer0.self_attn") == 4);
  CHECK(documents_of.at("decoder.seg2.layer0.self_attn") == 1);
  std::vector<std::string> shards;
  for (int64_t k = 0; k < 2; ++k) {
    CorpusRunOptions s = o;
    s.shard = {k, 2};
    s.out_dir = (dir / ("shard" + std::to_string(k))).string();
    run_corpus(model, s);
    shards.push_back(s.out_dir);
  }
  merge_corpus((dir / "merged").string(), shards, false);
  CHECK(folder_bytes(dir / "merged") == folder_bytes(dir / "whole"));
}

TEST_CASE("a corpus run cancelled and resumed writes the same bytes as an uninterrupted run",
          "[corpus]") {
  const Model model = load_model("demo:induction");
  const ScratchDir dir("resume");
  write_text(dir / "corpus.txt", join_lines(induction_lines()));
  run_corpus(model, run_options(dir / "corpus.txt", dir / "whole", 4));
  const auto expected = folder_bytes(dir / "whole");

  const int64_t stop_at = GENERATE(1, 3, 7);
  std::atomic<bool> cancel{false};
  CorpusRunOptions o =
      run_options(dir / "corpus.txt", dir / ("resumed" + std::to_string(stop_at)), 4);
  o.cancel = &cancel;
  o.checkpoint_documents = 2;  // checkpoints before the stop, too
  fs::remove_all(o.out_dir);   // left by the previous section
  o.progress = [&](int64_t done, int64_t) {
    if (done == stop_at) cancel.store(true);
  };
  const CorpusRunResult first = run_corpus(model, o);
  CHECK(first.cancelled);
  CHECK_FALSE(first.finished);
  CHECK(first.done == stop_at);
  const CorpusIndex stopped = read_corpus_folder(o.out_dir);
  CHECK(stopped.documents_done() == stop_at);
  CHECK_FALSE(stopped.finished());
  CHECK(folder_bytes(o.out_dir) != expected);

  SECTION("resumed") {}
  SECTION("resumed after a kill that left documents.jsonl holding an unreferenced document") {
    // The state between a checkpoint's manifest and the documents file's compaction.
    std::ofstream(fs::path(o.out_dir) / "documents.jsonl", std::ios::app)
        << R"({"document":13,"text":"zz","source":["z","z"],"target":[]})"
        << "\n";
  }
  cancel.store(false);
  o.progress = nullptr;
  const CorpusRunResult second = run_corpus(model, o);
  CHECK(second.finished);
  CHECK(second.done_before == stop_at);
  CHECK(folder_bytes(o.out_dir) == expected);
}

TEST_CASE("a corpus document longer than the token limit is skipped and recorded", "[corpus]") {
  const Model model = load_model("demo:induction");
  const ScratchDir dir("long");
  write_text(dir / "corpus.txt", "abcabc\n" + std::string(80, 'k') + "\nabcdefghijkl\nxyz\n");
  CorpusRunOptions o = run_options(dir / "corpus.txt", dir / "out", 5);
  o.settings.max_tokens = 10;
  const CorpusRunResult r = run_corpus(model, o);
  CHECK(r.finished);
  CHECK(r.measured == 2);
  REQUIRE(r.skipped_now.size() == 2);
  CHECK(r.skipped_now[0].document == 1);
  CHECK(r.skipped_now[0].reason == "80 tokens, over the limit of 10 (--max-tokens)");
  CHECK(r.skipped_now[1].document == 2);
  const std::string manifest = read_text(dir / "out" / "manifest.json");
  CHECK(manifest.find(
            R"x({"document":2,"reason":"12 tokens, over the limit of 10 (--max-tokens)"})x") !=
        std::string::npos);
  CHECK(manifest.find(R"("token_limit":10)") != std::string::npos);
  SECTION("the model's max_positions (64) when --max-tokens is above it") {
    CorpusRunOptions big = run_options(dir / "corpus.txt", dir / "big", 5);
    big.settings.max_tokens = 1000;
    const CorpusRunResult b = run_corpus(model, big);
    REQUIRE(b.skipped_now.size() == 1);
    CHECK(b.skipped_now[0].reason == "80 tokens, over the limit of 64 (the model's max_positions)");
  }
}

TEST_CASE("corpus runs and merges refuse bad input by name", "[corpus]") {
  const Model model = load_model("demo:induction");
  const ScratchDir dir("refusals");
  write_text(dir / "corpus.txt", "abcabc\nxyzxyz\nhello\n");
  auto run_into = [&](const std::string& out, int64_t top) {
    return run_corpus(model, run_options(dir / "corpus.txt", dir / out, top));
  };
  SECTION("a missing, empty or blank corpus file") {
    CHECK_THROWS_WITH(run_corpus(model, run_options(dir / "nope.txt", dir / "o", 5)),
                      Catch::Contains("no such file"));
    write_text(dir / "empty.txt", "");
    CHECK_THROWS_WITH(run_corpus(model, run_options(dir / "empty.txt", dir / "o", 5)),
                      Catch::Contains("is empty"));
    write_text(dir / "blank.txt", "\n\r\n\n");
    CHECK_THROWS_WITH(run_corpus(model, run_options(dir / "blank.txt", dir / "o", 5)),
                      Catch::Contains("holds no document (all of its 3 lines are empty)"));
    CHECK_THROWS_WITH(run_corpus(model, run_options(dir, dir / "o", 5)), Catch::Contains("folder"));
  }
  SECTION("shards that are not K/N with K below N") {
    CHECK_THROWS_WITH(parse_corpus_shard("3/2", "--shard"), Catch::Contains("K must be below N"));
    CHECK_THROWS_WITH(parse_corpus_shard("abc", "--shard"), Catch::Contains("is not K/N"));
    CHECK_THROWS_WITH(parse_corpus_shard("-1/2", "--shard"), Catch::Contains("is not K/N"));
    CHECK_THROWS_WITH(parse_corpus_shard("1/", "--shard"), Catch::Contains("is not K/N"));
    CHECK_THROWS_WITH(parse_corpus_shard("0/0", "--shard"), Catch::Contains("at least 1"));
    CHECK_THROWS_WITH(parse_corpus_shard("99999999999999999999/3", "--shard"),
                      Catch::Contains("is not K/N"));
    CHECK(parse_corpus_shard("2/3", "--shard").index == 2);
  }
  SECTION("an output folder holding another run, other files, or a corrupt manifest") {
    run_into("out", 5);
    CHECK_THROWS_WITH(run_into("out", 6),
                      Catch::Contains("holds a corpus run of another --top (5 there, 6 here)"));
    const ModelConfig c = preset_test::small_preset_config("tiny-decoder");
    const Model other(c, init_params(c, 1));
    CHECK_THROWS_WITH(run_corpus(other, run_options(dir / "corpus.txt", dir / "out", 5)),
                      Catch::Contains("another model"));
    write_text(dir / "other.txt", "abcabc\nxyzxyz\nhellO\n");
    CHECK_THROWS_WITH(run_corpus(model, run_options(dir / "other.txt", dir / "out", 5)),
                      Catch::Contains("another corpus file"));
    CorpusRunOptions sharded = run_options(dir / "corpus.txt", dir / "out", 5);
    sharded.shard = {0, 2};
    CHECK_THROWS_WITH(run_corpus(model, sharded), Catch::Contains("another split into shards"));
    CHECK(run_into("out", 5).done_before == 3);  // the same arguments: nothing left to do

    fs::create_directories(dir / "foreign");
    write_text(dir / "foreign" / "notes.txt", "mine");
    CHECK_THROWS_WITH(run_into("foreign", 5),
                      Catch::Contains("holds \"notes.txt\", which is no part of a corpus run"));
    CHECK(read_text(dir / "foreign" / "notes.txt") == "mine");

    fs::create_directories(dir / "corrupt");
    write_text(dir / "corrupt" / "manifest.json", "{\"format\": \"atlas-corpus\", ");
    CHECK_THROWS_WITH(run_into("corrupt", 5),
                      Catch::Contains("manifest.json") && Catch::Contains("cannot be resumed"));
    write_text(dir / "corrupt" / "manifest.json", "{\"format\": \"atlas-dump\"}");
    CHECK_THROWS_WITH(run_into("corrupt", 5), Catch::Contains("not the manifest of a corpus run"));
    std::string manifest = read_text(dir / "out" / "manifest.json");
    manifest.replace(manifest.find("\"entropy\":\""), 11, "\"entropy\":\"x");
    write_text(dir / "corrupt" / "manifest.json", manifest);
    CHECK_THROWS_WITH(run_into("corrupt", 5), Catch::Contains("is not an exact sum"));
  }
  SECTION("merges of unfinished, missing, repeated or foreign shards") {
    std::atomic<bool> cancel{true};
    CorpusRunOptions o = run_options(dir / "corpus.txt", dir / "s0", 5);
    o.shard = {0, 2};
    o.cancel = &cancel;
    run_corpus(model, o);
    CHECK_THROWS_WITH(merge_corpus((dir / "m").string(), {o.out_dir}, true),
                      Catch::Contains("shard 0/2 is not finished"));
    o.cancel = nullptr;
    run_corpus(model, o);
    CHECK_THROWS_WITH(
        merge_corpus((dir / "m").string(), {o.out_dir}, false),
        Catch::Contains("missing shards: 1/2; merge them too, or pass --allow-missing"));
    CHECK_THROWS_WITH(merge_corpus((dir / "m").string(), {o.out_dir, o.out_dir}, false),
                      Catch::Contains("both hold shard 0/2 (a folder given twice)"));
    CorpusRunOptions p = run_options(dir / "corpus.txt", dir / "s1", 6);
    p.shard = {1, 2};
    run_corpus(model, p);
    CHECK_THROWS_WITH(merge_corpus((dir / "m").string(), {o.out_dir, p.out_dir}, false),
                      Catch::Contains("not shards of one run") && Catch::Contains("another --top"));
    CHECK_THROWS_WITH(merge_corpus(o.out_dir, {o.out_dir}, true),
                      Catch::Contains("is one of the shards"));
    CHECK_THROWS_WITH(merge_corpus((dir / "m").string(), {}, false),
                      Catch::Contains("nothing to merge"));
    CHECK_THROWS_WITH(merge_corpus((dir / "m").string(), {(dir / "nowhere").string()}, false),
                      Catch::Contains("manifest.json: no such file"));
    CHECK_FALSE(fs::exists(dir / "m"));
  }
}

TEST_CASE("a corpus manifest's integers are range-checked before they size or index anything",
          "[corpus]") {
  // A 13 KB manifest whose head number was 2^28 once grew a resumed run past 13 GB (its views'
  // [layers, heads] tables), and 2^62 ended in "out of memory". Every number is now checked
  // against what it indexes: the format's ranges when the folder is read (resume, merge,
  // query), the model's layers and heads when a run is resumed.
  const Model model = load_model("demo:induction");
  const ModelConfig& c = model.config();
  const ScratchDir dir("integers");
  write_text(dir / "corpus.txt", "abcabc\nxyzxyz\nhello\n");
  run_corpus(model, run_options(dir / "corpus.txt", dir / "out", 5));
  const nlohmann::ordered_json good =
      nlohmann::ordered_json::parse(read_text(dir / "out" / "manifest.json"));
  REQUIRE(good["heads"].size() == size_t(c.n_layers * c.n_heads));  // the oracle's shape
  REQUIRE(!good["links"].empty());
  // The run's folder with its manifest edited; resuming it must refuse with `message`.
  // `by_format`: the folder's own ranges are broken, so a merge (no model) refuses it too.
  auto resume_refuses = [&](const std::function<void(nlohmann::ordered_json&)>& edit,
                            const std::string& message, bool by_format = true) {
    fs::remove_all(dir / "edited");
    fs::copy(dir / "out", dir / "edited", fs::copy_options::recursive);
    nlohmann::ordered_json m = good;
    edit(m);
    write_text(dir / "edited" / "manifest.json", m.dump());
    INFO(message);
    CHECK_THROWS_WITH(run_corpus(model, run_options(dir / "corpus.txt", dir / "edited", 5)),
                      Catch::Contains(message) && Catch::Contains("cannot be resumed"));
    if (by_format)
      CHECK_THROWS_WITH(merge_corpus((dir / "merged").string(), {(dir / "edited").string()}, true),
                        Catch::Contains(message));
  };
  SECTION("a head number of 2^28 or 2^62, in a head row or a link list") {
    for (const char* list : {"heads", "links"})
      for (const int64_t head : {int64_t(1) << 28, int64_t(1) << 62}) {
        resume_refuses([&](auto& m) { m[list][0]["head"] = head; },
                       std::string("\"") + list + "\" entry 0: \"head\" is " +
                           std::to_string(head) + ", out of range: it must be from 0 to 1023");
      }
    resume_refuses([](auto& m) { m["heads"][1]["head"] = uint64_t(1) << 63; },
                   "\"heads\" entry 1: \"head\" is 9223372036854775808, out of range");
    resume_refuses([](auto& m) { m["heads"][0]["head"] = -2; },
                   "\"head\" is -2, out of range: it must be from 0 to 1023");
  }
  SECTION("layer, step and segment numbers beyond any model, or beyond the token limit") {
    resume_refuses([](auto& m) { m["links"][0]["layer"] = int64_t(1) << 40; },
                   "\"layer\" is 1099511627776, out of range: it must be from 0 to 1023");
    resume_refuses([](auto& m) { m["heads"][0]["step"] = 5000; },
                   "\"step\" is 5000, out of range: it must be from -1 to 1024");
    resume_refuses([](auto& m) { m["heads"][0]["step"] = 0; }, "\"step\" is 0");
    resume_refuses([](auto& m) { m["links"][0]["segment"] = 64; },
                   "\"segment\" is 64, out of range: it must be from -1 to 63");
  }
  SECTION("numbers within the format's ranges but beyond the model resuming the run") {
    resume_refuses([&](auto& m) { m["links"][0]["head"] = c.n_heads; },
                   "head " + std::to_string(c.n_heads) + " is out of range: model " + c.name +
                       " has heads 0 to " + std::to_string(c.n_heads - 1),
                   false);
    resume_refuses([&](auto& m) { m["links"][0]["layer"] = 1000; },
                   "is out of range: model " + c.name + " has layers 0 to " +
                       std::to_string(c.n_layers - 1),
                   false);
  }
  SECTION("head rows whose numbers span tables far larger than the rows listed") {
    resume_refuses([](auto& m) { m["heads"][0]["layer"] = 1023; },
                   "\"heads\" lists " + std::to_string(good["heads"].size()) +
                       " heads, but their layer and head numbers span tables of");
  }
  SECTION("counts, documents, positions and weights out of range") {
    resume_refuses([](auto& m) { m["shards"]["count"] = int64_t(1) << 62; },
                   "\"shards\": \"count\" is 4611686018427387904, out of range: it must be from "
                   "1 to 1048576");
    resume_refuses([](auto& m) { m["settings"]["top"] = int64_t(1) << 62; },
                   "\"settings\": \"top\" is 4611686018427387904, out of range");
    resume_refuses([](auto& m) { m["settings"]["token_limit"] = int64_t(1) << 30; },
                   "\"settings\": \"token_limit\" is 1073741824, out of range");
    resume_refuses([](auto& m) { m["corpus"]["documents"] = 4; },
                   "\"corpus\": \"documents\" is 4, out of range: it must be from 1 to 3");
    resume_refuses([](auto& m) { m["links"][0]["links"][0][0] = 3; },
                   "\"links\" entry 0: a link of");
    resume_refuses([](auto& m) { m["links"][0]["links"][0][1] = int64_t(1) << 62; },
                   "positions below 1048576");
    resume_refuses([](auto& m) { m["links"][0]["links"][0][3] = 1e300; }, "a weight above 0");
    resume_refuses(
        [](auto& m) {
          m["skipped"] = {{{"document", 2}, {"reason", "r"}}, {{"document", 1}, {"reason", "r"}}};
          m["progress"]["skipped"] = 2;
        },
        "\"skipped\" entry 1: document 1 is not after the one before");
    resume_refuses(
        [](auto& m) {
          m["skipped"] = {{{"document", int64_t(1) << 62}, {"reason", "r"}}};
          m["progress"]["skipped"] = 1;
        },
        "\"skipped\" entry 0: \"document\" is 4611686018427387904, out of range: it must be "
        "from 0 to 2");
  }
  SECTION("--shard N is capped as the manifest's count is") {
    CHECK_THROWS_WITH(parse_corpus_shard("0/4611686018427387904", "--shard"),
                      Catch::Contains("must be at most 1048576"));
  }
}
