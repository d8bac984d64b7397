// Every JSON a user can hand the app goes through one depth-capped parser
// (core/formats/json_text.h): a file of nested brackets is refused at the cap, by name, for
// each reader, instead of building a huge tree (a 98 MB header of "[[[[" took 3.7 GB).
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>

#include "core/config/config.h"
#include "core/formats/dump.h"
#include "core/formats/json_text.h"
#include "core/formats/model_io.h"
#include "core/formats/safetensors.h"
#include "tests/core/hf_test_util.h"

using namespace atlas;
using Catch::Contains;
using Catch::StartsWith;
namespace fs = std::filesystem;

namespace {

std::string nested(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

std::string nested_in_object(const std::string& key, size_t depth) {
  return "{\"" + key + "\": " + nested(depth) + "}";
}

}  // namespace

TEST_CASE("json: depth is capped, counted as a hand count gives", "[json-limits]") {
  // Depth 128 is allowed (serde_json's limit), 129 is not.
  CHECK(parse_json_text(nested(128), "t").is_array());
  CHECK_THROWS_WITH(parse_json_text(nested(129), "t"),
                    Contains("t: JSON nesting deeper than 128 levels"));
  JsonLimits shallow;
  shallow.max_depth = 3;
  CHECK(parse_json_text(R"({"a": {"b": [1]}})", "t", shallow).is_object());
  CHECK_THROWS_WITH(parse_json_text(R"({"a": {"b": [[1]]}})", "t", shallow), Contains("deeper than 3"));
  // A bracket bomb of 10 MB is refused at byte 129, not parsed.
  CHECK_THROWS_WITH(parse_json_text(std::string(10u << 20, '['), "bomb"),
                    Contains("deeper than 128"));
}

TEST_CASE("json: duplicate keys are refused or last-wins as asked", "[json-limits]") {
  CHECK_THROWS_WITH(parse_json_text(R"({"a": 1, "a": 2})", "ours"),
                    Contains("duplicate key \"a\""));
  JsonLimits python_like;
  python_like.refuse_duplicate_keys = false;
  CHECK(parse_json_text(R"({"a": 1, "a": 2})", "hf", python_like)["a"] == 2);  // as json.load
  CHECK(parse_json_text(R"({"a": {"x": 1}, "a": [3]})", "hf", python_like)["a"] == nlohmann::json::array({3}));
  CHECK_THROWS_WITH(parse_json_text("{\"a\": 1", "f.json"),
                    Contains("f.json: malformed JSON at byte"));
  CHECK_THROWS_WITH(parse_json_text("[1", ""), StartsWith("malformed JSON at byte"));
}

TEST_CASE("json: every reader of user JSON refuses a nesting bomb by name", "[json-limits]") {
  const std::string bomb = nested(1000);
  // Model config (our format; its own cap is 64).
  CHECK_THROWS_WITH(parse_config(nested_in_object("name", 100), "config.json"),
                    Contains("config.json") && Contains("deeper than 64"));

  // Hugging Face config.json, tokenizer file and weights index.
  const fs::path hf = hf_test::tiny_gpt2_dir("json_limits_hf");
  REQUIRE_NOTHROW(load_model(hf.string()));
  hf_test::write_text(hf / "vocab.json", bomb);
  CHECK_THROWS_WITH(load_model(hf.string()), Contains("vocab.json") && Contains("deeper than 128"));
  hf_test::write_gpt2_tokenizer(hf);
  const std::string config = hf_test::read_text_file(hf / "config.json");
  hf_test::write_text(hf / "config.json",
                      config.substr(0, config.size() - 1) + ", \"extra\": " + bomb + "}");
  // Not recognisable as a Hugging Face config, it is read as ours (whose cap is 64).
  CHECK_THROWS_WITH(load_model(hf.string()), Contains("config.json") && Contains("JSON nesting deeper than"));
  hf_test::write_text(hf / "config.json", config);
  fs::rename(hf / "model.safetensors", hf / "shard.safetensors");
  hf_test::write_text(hf / "model.safetensors.index.json", nested_in_object("weight_map", 1000));
  CHECK_THROWS_WITH(load_model(hf.string()),
                    Contains("model.safetensors.index.json") && Contains("deeper than 128"));
  fs::remove_all(hf);

  // A safetensors header.
  const std::string header = nested_in_object("__metadata__", 1000);
  std::vector<uint8_t> file(8 + header.size());
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) file[size_t(i)] = uint8_t(n >> (8 * i));
  std::memcpy(file.data() + 8, header.data(), header.size());
  CHECK_THROWS_WITH(parse_safetensors(file.data(), file.size(), "deep.safetensors"),
                    Contains("deep.safetensors") && Contains("deeper than 128"));

  // A dump manifest.
  CHECK_THROWS_WITH(parse_trace_dump(nested_in_object("format", 1000), "manifest.json",
                                     [](const std::string&) { return Tensor(); }),
                    Contains("manifest.json") && Contains("deeper than 128"));
}
