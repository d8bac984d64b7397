// Corpus queries (core/analysis/corpus_query.h): link contexts written out by hand for both ways
// tokenizers spell text, token matching, and the filters and ranking of find_corpus_links on a
// small index built here.
#include <catch2/catch.hpp>

#include "core/analysis/corpus_query.h"
#include "core/tensor/error.h"

using namespace atlas;

TEST_CASE("a link's context marks the query and key in the tokenizer's spelling", "[corpus]") {
  // Byte/BPE labels carry their spaces as "␣".
  const std::vector<std::string> bpe = {"The", "␣cat", "␣sat", "␣on", "␣the", "␣mat", "."};
  CHECK(corpus_link_context(bpe, 4, 1, 8, "none") == "The <<cat>> sat on [[the]] mat.");
  CHECK(corpus_link_context(bpe, 4, 1, 0, "none") == "... <<cat>> ... [[the]] ...");
  CHECK(corpus_link_context(bpe, 2, 2, 1, "none") == "... cat [[<<sat>>]] on ...");
  CHECK(corpus_link_context({"a", "␣", "b"}, 1, 0, 5, "none") == "<<a>>[[ ]]b");
  // Word and WordPiece labels: spaces between words, "##" pieces glued on.
  const std::vector<std::string> wp = {"[CLS]", "the", "play", "##ing", "cat", "[SEP]"};
  CHECK(corpus_link_context(wp, 3, 1, 10, "spaces") == "[CLS] <<the>> play[[ing]] cat [SEP]");
  CHECK(corpus_link_context(wp, 4, 0, 1, "spaces") == "<<[CLS]>> the ... ing [[cat]] [SEP]");
}

TEST_CASE("a query token matches a label with or without its space or continuation mark",
          "[corpus]") {
  CHECK(corpus_token_matches("␣the", "the"));
  CHECK(corpus_token_matches("␣the", " the"));
  CHECK(corpus_token_matches("␣the", "␣the"));
  CHECK(corpus_token_matches("##ing", "ing"));
  CHECK(corpus_token_matches("a", "a"));
  CHECK_FALSE(corpus_token_matches("␣them", "the"));
  CHECK_FALSE(corpus_token_matches("The", "the"));
  CHECK_FALSE(corpus_token_matches("␣", ""));
}

TEST_CASE("corpus link queries filter by map, layer, head and tokens and rank across maps",
          "[corpus]") {
  CorpusIndex index;
  auto head = [](int64_t layer, int64_t h) {
    AttentionMap m;
    m.stack = "decoder";
    m.sublayer = "self_attn";
    m.layer = layer;
    return map_head(m, h);
  };
  index.state.documents[0] = {"ab ab", {"a", "b", "␣", "a", "b"}, {}};
  index.state.documents[4] = {"xy", {"x", "y"}, {}};
  index.state.links[head(0, 0)].links = {{0, 3, 1, 0.9f}, {4, 1, 0, 0.5f}};
  index.state.links[head(0, 1)].links = {{0, 4, 0, 0.9f}, {0, 4, 3, 0.7f}};
  index.state.links[head(1, 0)].links = {{4, 1, 1, 0.95f}};
  auto ranks = [&](const CorpusLinkQuery& q) {
    std::vector<std::string> out;
    for (const CorpusLinkMatch& m : find_corpus_links(index, q))
      out.push_back(map_name(m.map) + "/" + std::to_string(m.map.head) + ":" +
                    std::to_string(m.link.document) + "," + std::to_string(m.link.query) + "," +
                    std::to_string(m.link.key));
    return out;
  };
  // Equal weights: document, then map and head, then query and key.
  CHECK(ranks({}) == std::vector<std::string>{
                         "decoder.layer1.self_attn/0:4,1,1", "decoder.layer0.self_attn/0:0,3,1",
                         "decoder.layer0.self_attn/1:0,4,0", "decoder.layer0.self_attn/1:0,4,3",
                         "decoder.layer0.self_attn/0:4,1,0"});
  CorpusLinkQuery q;
  q.layer = 0;
  q.head = 1;
  q.top = 1;
  CHECK(ranks(q) == std::vector<std::string>{"decoder.layer0.self_attn/1:0,4,0"});
  q = {};
  q.map = "decoder.layer0.self_attn";
  q.query_token = "a";
  CHECK(ranks(q) == std::vector<std::string>{"decoder.layer0.self_attn/0:0,3,1"});
  q = {};
  q.key_token = "a";
  CHECK(ranks(q).size() == 2);
  q = {};
  q.map = "decoder.layer7.self_attn";
  CHECK_THROWS_WITH(find_corpus_links(index, q),
                    Catch::Contains("holds decoder.layer0.self_attn, decoder.layer1.self_attn"));
  q = {};
  q.head = 2;
  CHECK_THROWS_WITH(find_corpus_links(index, q), Catch::Contains("heads 0 to 1"));
  q = {};
  q.layer = 2;
  CHECK_THROWS_WITH(find_corpus_links(index, q), Catch::Contains("layers 0 to 1"));
}
