// Bad Hugging Face directories: each gives a message naming the file and the problem.
#include <catch2/catch.hpp>

#include "core/tensor/error.h"
#include "core/formats/hf/hf_checkpoint.h"
#include "tests/core/hf_test_util.h"
#include "core/formats/model_io.h"

using namespace atlas;
using namespace hf_test;


TEST_CASE("the tiny GPT-2 used by the error tests is itself valid", "[hf]") {
  fs::path dir = tiny_gpt2_dir("valid");
  CHECK_NOTHROW(load_model(dir.string()));
  fs::remove_all(dir);
}

TEST_CASE("a HF directory without config.json names the missing file", "[hf]") {
  fs::path dir = tiny_gpt2_dir("no-config");
  fs::remove(dir / "config.json");
  CHECK_THROWS_WITH(read_hf_checkpoint(dir.string()), Catch::Contains("no config.json"));
  CHECK_THROWS_WITH(load_model(dir.string()), Catch::Contains("no config.json"));
  fs::remove_all(dir);
}

TEST_CASE("an unsupported model_type is refused with the supported list", "[hf]") {
  fs::path dir = tiny_gpt2_dir("t5");
  write_text(dir / "config.json", R"({"model_type": "t5", "d_model": 8})");
  CHECK_THROWS_WITH(load_model(dir.string()),
                    Catch::Contains("config.json: model_type \"t5\" is not supported") &&
                        Catch::Contains("gpt2, bert, distilbert"));
  fs::remove_all(dir);
}

TEST_CASE("a missing tokenizer file is named", "[hf]") {
  fs::path dir = tiny_gpt2_dir("no-merges");
  fs::remove(dir / "merges.txt");
  CHECK_THROWS_WITH(load_model(dir.string()), Catch::Contains("merges.txt") && Catch::Contains("missing"));
  fs::remove_all(dir);
}

TEST_CASE("GPT-2 with tie_word_embeddings false predicts through lm_head.weight", "[hf]") {
  fs::path tied = tiny_gpt2_dir("tied"), untied = tiny_gpt2_dir("untied", false, true);
  const Model a = load_model(tied.string()), b = load_model(untied.string());
  CHECK(a.config().output == OutputHead::Tied);
  CHECK(b.config().output == OutputHead::Untied);
  const RunResult ra = a.run("hello", "", {}), rb = b.run("hello", "", {});
  REQUIRE(ra.output.shape == rb.output.shape);
  // lm_head = 2 wte, so every logit doubles (the hidden states are the same weights).
  for (size_t i = 0; i < ra.output.data.size(); ++i)
    CHECK(rb.output.data[i] == Approx(2.0f * ra.output.data[i]).margin(1e-5));
  // Untied but no lm_head.weight: named.
  nlohmann::json j = nlohmann::json::parse(read_text_file(tied / "config.json"));
  j["tie_word_embeddings"] = false;
  write_text(tied / "config.json", j.dump());
  CHECK_THROWS_WITH(load_model(tied.string()), Catch::Contains("lm_head.weight"));
  fs::remove_all(tied);
  fs::remove_all(untied);
}

TEST_CASE("a tokenizer JSON with an out-of-range number is refused, naming the file", "[hf]") {
  // Found by tests/fuzz/fuzz_hf_tokenizer.cpp: nlohmann throws out_of_range (not parse_error)
  // for a number too large for a double, which escaped as an unhandled exception.
  fs::path dir = tiny_gpt2_dir("huge-number");
  write_text(dir / "vocab.json", R"({"a": 1e400})");
  CHECK_THROWS_WITH(load_model(dir.string()), Catch::Contains("vocab.json") && Catch::Contains("not valid JSON"));
  fs::remove_all(dir);
}

TEST_CASE("a tokenizer.json value of the wrong type is refused, naming the file", "[hf]") {
  // Found by the same fuzz target: "type": {} threw nlohmann's type_error out of the loader.
  fs::path dir = tiny_gpt2_dir("wrong-type");
  write_text(dir / "tokenizer.json", R"({"model": {"type": {}, "vocab": {"a": 0}}})");
  CHECK_THROWS_WITH(load_model(dir.string()), Catch::Contains("tokenizer.json") && Catch::Contains("wrong type"));
  fs::remove_all(dir);
}

TEST_CASE("a tensor whose shape disagrees with config.json is named with both shapes", "[hf]") {
  fs::path dir = tiny_gpt2_dir("shape");
  nlohmann::json j = nlohmann::json::parse(R"({"model_type": "gpt2", "vocab_size": 260,
      "n_embd": 8, "n_layer": 1, "n_head": 2, "n_positions": 6, "n_inner": 32})");
  write_text(dir / "config.json", j.dump());
  CHECK_THROWS_WITH(load_model(dir.string()),
                    Catch::Contains("model.safetensors: tensor h.0.mlp.c_fc.weight has shape [8, 16]") &&
                        Catch::Contains("implies [8, 32]"));
  fs::remove_all(dir);
}

TEST_CASE("a missing or unexpected tensor is named", "[hf]") {
  fs::path dir = tiny_gpt2_dir("missing");
  write_text(dir / "config.json", R"({"model_type": "gpt2", "vocab_size": 260, "n_embd": 8,
      "n_layer": 2, "n_head": 2, "n_positions": 6, "n_inner": 16})");
  CHECK_THROWS_WITH(load_model(dir.string()),
                    Catch::Contains("missing tensor h.1.ln_1.weight [8]") &&
                        Catch::Contains("model.safetensors"));
  fs::remove_all(dir);

  dir = tiny_gpt2_dir("unexpected", true);
  CHECK_THROWS_WITH(load_model(dir.string()),
                    Catch::Contains("model.safetensors: unexpected tensor h.0.attn.rotary.weight [8]"));
  write_text(dir / "config.json", R"({"model_type": "bert", "vocab_size": 260, "hidden_size": 8,
      "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 16})");
  CHECK_THROWS_WITH(read_hf_checkpoint(dir.string(), {.tokenizer = false}),
                    Catch::Contains("missing tensor embeddings.word_embeddings.weight"));
  fs::remove_all(dir);
}

TEST_CASE("a pickle-only directory is refused with conversion advice", "[hf]") {
  fs::path dir = tiny_gpt2_dir("pickle");
  fs::remove(dir / "model.safetensors");
  write_text(dir / "pytorch_model.bin", "PK\x03\x04 not really a zip");
  CHECK_THROWS_WITH(load_model(dir.string()),
                    Catch::Contains("pytorch_model.bin is a PyTorch pickle") &&
                        Catch::Contains("safe_serialization=True"));
  fs::remove(dir / "pytorch_model.bin");
  CHECK_THROWS_WITH(load_model(dir.string()),
                    Catch::Contains("no model.safetensors and no model.safetensors.index.json"));
  fs::remove_all(dir);
}

TEST_CASE("a truncated model.safetensors names the file", "[hf]") {
  fs::path dir = tiny_gpt2_dir("truncated");
  fs::path st = dir / "model.safetensors";
  fs::resize_file(st, fs::file_size(st) - 4);
  CHECK_THROWS_WITH(load_model(dir.string()),
                    Catch::Contains("model.safetensors") && Catch::Contains("truncated"));
  fs::remove_all(dir);
}

TEST_CASE("config options that change GPT-2's maths are refused, not ignored", "[hf]") {
  fs::path dir = tiny_gpt2_dir("options");
  write_text(dir / "config.json", R"({"model_type": "gpt2", "vocab_size": 260, "n_embd": 8,
      "n_layer": 1, "n_head": 2, "n_positions": 6, "n_inner": 16,
      "scale_attn_by_inverse_layer_idx": true})");
  CHECK_THROWS_WITH(load_model(dir.string()),
                    Catch::Contains("config.json: scale_attn_by_inverse_layer_idx true is not supported"));
  write_text(dir / "config.json", R"({"model_type": "gpt2", "vocab_size": 260, "n_embd": 8,
      "n_layer": 1, "n_head": 2, "n_positions": 6, "n_inner": 16, "activation_function": "swish"})");
  CHECK_THROWS_WITH(load_model(dir.string()),
                    Catch::Contains("activation_function \"swish\" is not supported"));
  write_text(dir / "config.json", R"({"model_type": "gpt2", "vocab_size": 260, "n_layer": 1})");
  CHECK_THROWS_WITH(load_model(dir.string()), Catch::Contains("config.json: missing key \"n_embd\""));
  fs::remove_all(dir);
}

TEST_CASE("config sizes beyond the engine's limits are refused before arithmetic uses them",
          "[hf]") {
  // n_embd 2^62 once overflowed 4 * n_embd (the default n_inner): undefined behaviour, which
  // the sanitizer build reports. Each size is now checked against the engine's limit for it
  // (core/config/config_limits.h) as it is read, with the file's own key in the message.
  fs::path dir = tiny_gpt2_dir("huge-sizes");
  const std::string huge = "4611686018427387904";  // 2^62
  // Without n_inner the default is 4 * n_embd: the product that overflowed.
  auto gpt2 = [&](const std::string& embd, const std::string& head, bool inner = false) {
    write_text(dir / "config.json", R"({"model_type": "gpt2", "vocab_size": 260, "n_embd": )" +
                                        embd + R"(, "n_layer": 1, "n_head": )" + head +
                                        R"(, "n_positions": 6)" +
                                        (inner ? R"(, "n_inner": 16})" : "}"));
  };
  gpt2(huge, "2");
  CHECK_THROWS_WITH(load_model(dir.string()),
                    Catch::Contains("config.json: n_embd is 4611686018427387904, out of range: it "
                                    "must be from 1 to 65536"));
  gpt2("8", huge);
  CHECK_THROWS_WITH(load_model(dir.string()),
                    Catch::Contains("n_head is 4611686018427387904, out of range: it must be "
                                    "from 1 to 1024"));
  gpt2("-8", "2");
  CHECK_THROWS_WITH(load_model(dir.string()), Catch::Contains("n_embd is -8, out of range"));
  gpt2("8", "2", true);  // the same file with sane sizes loads: the check is what refused
  CHECK_NOTHROW(load_model(dir.string()));
  // Llama: an explicit head_dim times 2^62 heads overflowed the same way.
  write_text(dir / "config.json", R"({"model_type": "llama", "vocab_size": 260,
      "hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": )" + huge +
                                      R"(, "head_dim": 4, "intermediate_size": 16})");
  CHECK_THROWS_WITH(load_model(dir.string()),
                    Catch::Contains("num_attention_heads is 4611686018427387904, out of range"));
  fs::remove_all(dir);
}
