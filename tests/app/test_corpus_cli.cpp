// atlas corpus, corpus-merge and corpus-query driven as a user would: the files a run writes,
// a resumed and a sharded run, the links printed against links.csv and the document text, and
// hostile arguments refused with a message and a non-zero exit.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "tests/app/cli_runner.h"

namespace fs = std::filesystem;
using atlas_test::fresh_dir;
using atlas_test::Output;
using atlas_test::read_all;
using atlas_test::run_atlas;

namespace {

// Letters only (demo:induction reads a-z): one token per character, no spaces to render.
const std::vector<std::string> kLines = {"abcdabcd", "",         "qwertyqwerty", "hello",
                                         "",         "zyxwzyxw", "mnopqrmnopq",  "abab"};

fs::path write_corpus(const fs::path& dir, const std::vector<std::string>& lines = kLines) {
  fs::create_directories(dir);
  std::ofstream out(dir / "corpus.txt", std::ios::binary);
  for (const auto& l : lines) out << l << "\n";
  return dir / "corpus.txt";
}

std::map<std::string, std::string> folder_bytes(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) out[fs::relative(e.path(), dir).string()] = read_all(e.path());
  return out;
}

std::vector<std::vector<std::string>> csv_rows(const std::string& text) {  // no quoted fields here
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> row;
    std::istringstream cells(line);
    for (std::string cell; std::getline(cells, cell, ',');) row.push_back(cell);
    rows.push_back(row);
  }
  return rows;
}

std::string corpus_cmd(const fs::path& file, const fs::path& out, const std::string& extra = "") {
  return "corpus demo:induction --file " + file.string() + " --out " + out.string() + " " + extra;
}

}  // namespace

TEST_CASE(
    "atlas corpus writes the manifest, head tables and links, and resumes a finished run as a "
    "no-op",
    "[cli][corpus]") {
  const fs::path dir = fresh_dir("corpus-run");
  const fs::path file = write_corpus(dir);
  Output o = run_atlas(corpus_cmd(file, dir / "index", "--top 5"));
  INFO(o.err);
  REQUIRE(o.code == 0);
  CHECK_THAT(o.out, Catch::Contains("6 documents: 6 measured, 0 skipped"));
  for (const char* f :
       {"manifest.json", "documents.jsonl", "heads.csv", "links.csv",
        "heads/decoder.self_attn.induction.npy", "heads/decoder.self_attn.entropy.npy"})
    CHECK(fs::exists(dir / "index" / f));
  const auto manifest = nlohmann::json::parse(read_all(dir / "index" / "manifest.json"));
  CHECK(manifest["format"] == "atlas-corpus");
  CHECK(manifest["corpus"]["lines"] == 8);
  CHECK(manifest["corpus"]["documents"] == 6);
  CHECK(manifest["progress"]["complete"] == true);
  CHECK(manifest["settings"]["top"] == 5);
  const auto heads = csv_rows(read_all(dir / "index" / "heads.csv"));
  REQUIRE(heads.size() == 1 + 2 * 4);  // 2 layers x 4 heads
  CHECK(heads[0][7] == "documents");
  CHECK(heads[1][7] == "6");
  const auto links = csv_rows(read_all(dir / "index" / "links.csv"));
  CHECK(links.size() == 1 + 2 * 4 * 5);  // 5 links for each head: every head has more candidates
  for (size_t r = 1; r < links.size(); ++r) {
    // The labels are the document's characters at the query and key positions.
    const std::string& line = kLines[std::stoul(links[r][8])];
    CHECK(links[r][11] == line.substr(std::stoul(links[r][9]), 1));
    CHECK(links[r][12] == line.substr(std::stoul(links[r][10]), 1));
  }

  const auto before = folder_bytes(dir / "index");
  o = run_atlas(corpus_cmd(file, dir / "index", "--top 5"));
  REQUIRE(o.code == 0);
  CHECK_THAT(o.out, Catch::Contains("resumed") && Catch::Contains("6 were done before"));
  CHECK(folder_bytes(dir / "index") == before);
  fs::remove_all(dir);
}

TEST_CASE("atlas corpus --shard runs merged by atlas corpus-merge equal one run byte for byte",
          "[cli][corpus]") {
  const fs::path dir = fresh_dir("corpus-shards");
  const fs::path file = write_corpus(dir);
  REQUIRE(run_atlas(corpus_cmd(file, dir / "whole", "--top 4 --exclude-self")).code == 0);
  for (int k = 0; k < 3; ++k) {
    const Output o =
        run_atlas(corpus_cmd(file, dir / ("s" + std::to_string(k)),
                             "--top 4 --exclude-self --shard " + std::to_string(k) + "/3"));
    INFO(o.err);
    REQUIRE(o.code == 0);
    CHECK_THAT(o.out, Catch::Contains("of shard " + std::to_string(k) + "/3"));
  }
  Output o = run_atlas("corpus-merge " + (dir / "merged").string() + " " + (dir / "s2").string() +
                       " " + (dir / "s0").string() + " " + (dir / "s1").string());
  INFO(o.err);
  REQUIRE(o.code == 0);
  CHECK_THAT(o.out, Catch::Contains("the whole corpus"));
  CHECK(folder_bytes(dir / "merged") == folder_bytes(dir / "whole"));

  o = run_atlas("corpus-merge " + (dir / "part").string() + " " + (dir / "s0").string());
  CHECK(o.code == 1);
  CHECK_THAT(o.err, Catch::Contains("missing shards: 1/3, 2/3"));
  CHECK_FALSE(fs::exists(dir / "part"));
  o = run_atlas("corpus-merge " + (dir / "part").string() + " " + (dir / "s0").string() +
                " --allow-missing");
  REQUIRE(o.code == 0);
  CHECK_THAT(o.err, Catch::Contains("lacks shards 1, 2"));
  REQUIRE(run_atlas(corpus_cmd(file, dir / "other", "--top 4 --shard 1/3")).code == 0);
  o = run_atlas("corpus-merge " + (dir / "m2").string() + " " + (dir / "s0").string() + " " +
                (dir / "other").string());
  CHECK(o.code == 1);
  CHECK_THAT(o.err, Catch::Contains("not shards of one run") && Catch::Contains("--exclude-self"));
  fs::remove_all(dir);
}

TEST_CASE("atlas corpus-query prints the strongest links in their document and the head table",
          "[cli][corpus]") {
  const fs::path dir = fresh_dir("corpus-query");
  const fs::path file = write_corpus(dir);
  REQUIRE(run_atlas(corpus_cmd(file, dir / "index", "--top 6")).code == 0);
  const std::string index = (dir / "index").string();
  const auto links = csv_rows(read_all(dir / "index" / "links.csv"));

  // The best link of one head is rank 1 of its rows in links.csv; with a context wider than
  // any line the whole document is shown, the query [[marked]] and the key <<marked>>.
  const auto best = *std::find_if(links.begin() + 1, links.end(), [](const auto& r) {
    return r[0] == "decoder.layer1.self_attn" && r[6] == "2" && r[7] == "1";
  });
  Output o = run_atlas("corpus-query " + index +
                       " --map decoder.layer1.self_attn --head 2 --top 1 --context 50");
  INFO(o.err);
  REQUIRE(o.code == 0);
  CHECK_THAT(o.out,
             Catch::Contains("decoder.layer1.self_attn head 2  document " + best[8] + "  query " +
                             best[9] + " " + best[11] + " -> key " + best[10] + " " + best[12]));
  const std::string line = kLines[std::stoul(best[8])];
  std::string marked;
  for (size_t t = 0; t < line.size(); ++t) {
    std::string c(1, line[t]);
    if (t == std::stoul(best[10])) c = "<<" + c + ">>";
    if (t == std::stoul(best[9])) c = "[[" + c + "]]";
    marked += c;
  }
  CHECK_THAT(o.out, Catch::Contains("\n   " + marked + "\n"));

  // A token some layer-0 link has as its query, from links.csv.
  const std::string token = (*std::find_if(links.begin() + 1, links.end(),
                                           [](const auto& r) { return r[3] == "0"; }))[11];
  o = run_atlas("corpus-query " + index + " --layer 0 --query-token " + token + " --top 50");
  REQUIRE(o.code == 0);
  std::istringstream out(o.out);
  int results = 0;
  for (std::string l; std::getline(out, l);)
    if (l.find(". ") != std::string::npos && l.find(" -> key ") != std::string::npos) {
      ++results;
      CHECK_THAT(l, Catch::Contains("decoder.layer0.self_attn") &&
                        Catch::Contains(" " + token + " -> key "));
    }
  CHECK(results > 0);

  o = run_atlas("corpus-query " + index + " --heads");
  REQUIRE(o.code == 0);
  CHECK_THAT(o.out, Catch::Contains("induction") && Catch::Contains("decoder.layer1.self_attn"));
  CHECK(std::count(o.out.begin(), o.out.end(), '\n') == 1 + 1 + 8);  // summary, header, 8 heads

  o = run_atlas("corpus-query " + index + " --query-token zzz");
  CHECK(o.code == 0);
  CHECK_THAT(o.out, Catch::Contains("no link matches"));
  fs::remove_all(dir);
}

TEST_CASE("atlas corpus verbs refuse hostile arguments with a message", "[cli][corpus]") {
  const fs::path dir = fresh_dir("corpus-hostile");
  const fs::path file = write_corpus(dir);
  auto refused = [](const std::string& args, const std::string& message) {
    const Output o = run_atlas(args);
    INFO(args << "\n" << o.err);
    CHECK(o.code == 1);
    CHECK_THAT(o.err, Catch::Contains(message));
    CHECK(std::count(o.err.begin(), o.err.end(), '\n') == 1);
  };
  const std::string out = (dir / "o").string();
  refused(corpus_cmd(dir / "missing.txt", dir / "o"), "no such file");
  refused(corpus_cmd("/dev/null", dir / "o"), "character device");
  refused(corpus_cmd(dir, dir / "o"), "folder");
  std::ofstream(dir / "empty.txt").close();
  refused(corpus_cmd(dir / "empty.txt", dir / "o"), "is empty");
  refused(corpus_cmd(file, dir / "o", "--shard 3/2"), "K must be below N");
  refused(corpus_cmd(file, dir / "o", "--shard abc"), "is not K/N");
  refused(corpus_cmd(file, dir / "o", "--shard 1/0"), "at least 1");
  refused(corpus_cmd(file, dir / "o", "--top 0"), "--top");
  refused(corpus_cmd(file, dir / "o", "--max-tokens -3"), "--max-tokens");
  refused("corpus demo:induction --out " + out, "missing --file");
  refused("corpus demo:induction --file " + file.string(), "missing --out");
  refused("corpus --file " + file.string() + " --out " + out, "one MODEL");
  CHECK_FALSE(fs::exists(dir / "o"));

  REQUIRE(run_atlas(corpus_cmd(file, dir / "o", "--top 3")).code == 0);
  refused(corpus_cmd(file, dir / "o", "--top 4"),
          "holds a corpus run of another --top (3 there, 4 here)");
  refused("corpus preset:tiny-decoder --file " + file.string() + " --out " + out, "another model");
  std::ofstream(dir / "o" / "manifest.json") << "{\"format\": \"atlas-corpus\", \"version\": ";
  refused(corpus_cmd(file, dir / "o", "--top 3"), "cannot be resumed");
  fs::create_directories(dir / "mine");
  std::ofstream(dir / "mine" / "thesis.tex") << "precious";
  refused(corpus_cmd(file, dir / "mine"), "holds \"thesis.tex\", which is no part of a corpus run");
  CHECK(read_all(dir / "mine" / "thesis.tex") == "precious");

  // Documents longer than the model takes are skipped with a warning; none measurable is an error.
  const fs::path longer = write_corpus(dir / "long", {"abab", std::string(70, 'x')});
  Output o = run_atlas(corpus_cmd(longer, dir / "long" / "o"));
  CHECK(o.code == 0);
  CHECK_THAT(
      o.err,
      Catch::Contains(
          "document 1 skipped: 70 tokens, over the limit of 64 (the model's max_positions)"));
  CHECK_THAT(o.out, Catch::Contains("1 measured, 1 skipped"));
  o = run_atlas(corpus_cmd(longer, dir / "long" / "o2", "--max-tokens 2"));
  CHECK(o.code == 1);
  CHECK_THAT(o.err,
             Catch::Contains("atlas corpus: no document of") && Catch::Contains("2 skipped"));

  refused("corpus-merge " + out, "at least one SHARD_DIR");
  refused("corpus-merge " + (dir / "m").string() + " " + (dir / "nowhere").string(),
          "manifest.json: no such file");
  refused("corpus-query " + (dir / "nowhere").string(), "manifest.json: no such file");
  refused("corpus-query " + (dir / "long" / "o").string() + " --map nope",
          "no such map; it holds decoder.layer0.self_attn");
  refused("corpus-query " + (dir / "long" / "o").string() + " --head 9", "heads 0 to 3");
  refused(
      "corpus-query " + (dir / "long" / "o").string() + " --map decoder.layer0.self_attn --layer 0",
      "not both");
  refused("corpus-query " + (dir / "long" / "o").string() + " --heads --top 3",
          "--heads prints the head table");
  for (const char* verb : {"corpus", "corpus-merge", "corpus-query"}) {
    o = run_atlas(std::string(verb) + " --help");
    CHECK(o.code == 0);
    CHECK_THAT(o.out, Catch::StartsWith(std::string("usage: atlas ") + verb));
  }
  CHECK_THAT(run_atlas("--help").out, Catch::Contains("corpus    "));
  fs::remove_all(dir);
}
