// The CLI on Hugging Face directories: run with --top-k, generate with --dump, and
// messages for bad directories, driven through the real `atlas` executable.
#include "tests/app/cli_runner.h"

#include <sstream>

#include "tests/core/hf_test_util.h"
#include "core/formats/npy.h"

using atlas_test::run_atlas;
namespace fs = std::filesystem;

TEST_CASE("atlas run on a GPT-2 directory prints the top-k next tokens", "[hf][cli]") {
  auto dir = hf_test::tiny_gpt2_dir("cli-topk");
  auto r = run_atlas("run " + dir.string() + " --text 'hi the' --top-k 5");
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("tokens (3):") != std::string::npos);
  const size_t at = r.out.find("prediction at the last position:");
  REQUIRE(at != std::string::npos);
  std::istringstream line(r.out.substr(at + 32, r.out.find('\n', at) - at - 32));
  std::vector<double> probs;
  std::string label;
  double p;
  while (line >> label >> p) probs.push_back(p);
  REQUIRE(probs.size() == 5);
  for (size_t i = 1; i < probs.size(); ++i) CHECK(probs[i] <= probs[i - 1]);
  fs::remove_all(dir);
}

TEST_CASE("atlas generate appends tokens and dumps attention over all of them", "[hf][cli]") {
  auto dir = hf_test::tiny_gpt2_dir("cli-generate");
  auto dump = atlas_test::fresh_dir("hf-generate-dump");
  auto r = run_atlas("generate " + dir.string() + " --text hi --tokens 3 --greedy --top-k 2 --dump " +
                     dump.string());
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("generated tokens (3):") != std::string::npos);
  CHECK(r.out.find("text: hi") != std::string::npos);
  CHECK(r.out.find("next-token top-2:") != std::string::npos);
  // 2 prompt tokens + 3 generated: causal attention [heads 2, 5, 5].
  atlas::Tensor a = atlas::read_npy((dump / "decoder.layer0.self_attn.npy").string());
  CHECK(a.shape == atlas::Shape{2, 5, 5});
  CHECK(a.data[4] == 0.0f);  // head 0, query 0 cannot see key 4 (causal)

  auto sampled1 = run_atlas("generate " + dir.string() + " --text hi --tokens 3 --temperature 0.8 --seed 5");
  auto sampled2 = run_atlas("generate " + dir.string() + " --text hi --tokens 3 --temperature 0.8 --seed 5");
  REQUIRE(sampled1.code == 0);
  CHECK(sampled1.out == sampled2.out);

  auto too_long = run_atlas("generate " + dir.string() + " --text hi --tokens 5");
  CHECK(too_long.code != 0);
  CHECK(too_long.err.find("at most 4 new tokens fit") != std::string::npos);
  fs::remove_all(dir);
  fs::remove_all(dump);
}

TEST_CASE("atlas names the file and the problem of a bad HF directory", "[hf][cli]") {
  auto dir = hf_test::tiny_gpt2_dir("cli-bad");
  fs::remove(dir / "vocab.json");
  auto r = run_atlas("run " + dir.string() + " --text hi");
  CHECK(r.code != 0);
  CHECK(r.err.find("vocab.json") != std::string::npos);
  hf_test::write_text(dir / "config.json", R"({"model_type": "mamba"})");
  r = run_atlas("run " + dir.string() + " --text hi");
  CHECK(r.err.find("model_type \"mamba\" is not supported") != std::string::npos);
  fs::remove_all(dir);
}

namespace {

// A one-layer BERT directory (d 8) over `words`; `mlm_bias`: add BertForMaskedLM's head with
// these output biases.
fs::path tiny_bert_dir(const std::string& name, const std::vector<std::string>& words,
                       const std::vector<float>& mlm_bias = {}) {
  auto dir = hf_test::fresh_dir(name);
  const int64_t V = int64_t(words.size()), d = 8, f = 16, P = 10;
  hf_test::write_bert_vocab(dir, words);
  nlohmann::json j = {{"model_type", "bert"}, {"vocab_size", V}, {"hidden_size", d},
                      {"num_hidden_layers", 1}, {"num_attention_heads", 2},
                      {"intermediate_size", f}, {"max_position_embeddings", P},
                      {"type_vocab_size", 2}};
  hf_test::write_text(dir / "config.json", j.dump());
  hf_test::HfTensors t;
  uint32_t s = 1;
  auto add = [&](const std::string& n, std::vector<int64_t> shape) {
    t["bert." + n] = hf_test::pattern(shape, s++);
  };
  add("embeddings.word_embeddings.weight", {V, d});
  add("embeddings.position_embeddings.weight", {P, d});
  add("embeddings.token_type_embeddings.weight", {2, d});
  add("embeddings.LayerNorm.weight", {d});
  add("embeddings.LayerNorm.bias", {d});
  const std::string h = "encoder.layer.0.";
  for (const char* n : {"attention.self.query", "attention.self.key", "attention.self.value",
                        "attention.output.dense"}) {
    add(h + n + ".weight", {d, d});
    add(h + n + ".bias", {d});
  }
  add(h + "intermediate.dense.weight", {f, d});
  add(h + "intermediate.dense.bias", {f});
  add(h + "output.dense.weight", {d, f});
  add(h + "output.dense.bias", {d});
  for (const char* n : {"attention.output.LayerNorm", "output.LayerNorm"}) {
    add(h + n + ".weight", {d});
    add(h + n + ".bias", {d});
  }
  if (!mlm_bias.empty()) {
    t["cls.predictions.transform.dense.weight"] = hf_test::pattern({d, d}, s++);
    t["cls.predictions.transform.dense.bias"] = hf_test::pattern({d}, s++);
    t["cls.predictions.transform.LayerNorm.weight"] = hf_test::pattern({d}, s++);
    t["cls.predictions.transform.LayerNorm.bias"] = hf_test::pattern({d}, s++);
    t["cls.predictions.bias"] = hf_test::HfTensor{{V}, mlm_bias};
  }
  hf_test::write_safetensors_file(dir / "model.safetensors", t);
  return dir;
}

}  // namespace

TEST_CASE("atlas run on a BERT directory shows [CLS]/[SEP] tokens and dumps attention", "[hf][cli]") {
  const std::vector<std::string> words = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "cat", "sat"};
  auto dir = tiny_bert_dir("cli-bert", words);
  auto dump = atlas_test::fresh_dir("hf-bert-dump");
  auto r = run_atlas("run " + dir.string() + " --text 'The cat sat' --dump " + dump.string());
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("tokens (5): [CLS] the cat sat [SEP]") != std::string::npos);
  atlas::Tensor a = atlas::read_npy((dump / "encoder.layer0.attn.npy").string());
  CHECK(a.shape == atlas::Shape{2, 5, 5});
  auto g = run_atlas("generate " + dir.string() + " --text 'the cat' --tokens 1");
  CHECK(g.code != 0);
  CHECK(g.err.find("decoder-only model with an output head") != std::string::npos);
  fs::remove_all(dir);
  fs::remove_all(dump);
}

TEST_CASE("atlas run on a BertForMaskedLM directory fills each [MASK]", "[hf][cli]") {
  const std::vector<std::string> words = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat"};
  // Without the bias the head's logits stay within a few units; "cat" gets +40, so it must win.
  std::vector<float> bias(words.size(), 0.0f);
  bias[6] = 40.0f;
  auto dir = tiny_bert_dir("cli-bert-mlm", words, bias);
  auto r = run_atlas("run " + dir.string() + " --text 'the [MASK] sat' --top-k 2");
  INFO(r.err << r.out);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("tokens (5): [CLS] the [MASK] sat [SEP]") != std::string::npos);
  CHECK(r.out.find("fill for [MASK] at 2: cat 1.000") != std::string::npos);
  fs::remove_all(dir);
}
