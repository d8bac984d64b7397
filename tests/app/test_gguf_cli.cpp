// atlas gguf: the summary, --metadata, --tensors and --dump-tensor on GGUF files written byte by
// byte (tests/core/gguf_test_util.h), driven through the real `atlas` executable.
#include "tests/app/cli_runner.h"

#include "core/formats/npy.h"
#include "tests/core/gguf_test_util.h"

using atlas_test::run_atlas;
namespace fs = std::filesystem;

namespace {

fs::path tiny_file(const std::string& test) {
  const fs::path dir = atlas_test::fresh_dir(test);
  fs::create_directories(dir);
  gguf_test::write_file(dir / "tiny.gguf", gguf_test::tiny_model());
  return dir;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("atlas gguf summarises version, architecture and tensor types", "[gguf][cli]") {
  const fs::path dir = tiny_file("gguf-summary");
  const auto r = run_atlas("gguf " + (dir / "tiny.gguf").string());
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  CHECK(has(r.out, "GGUF version 3, alignment 32"));
  CHECK(has(r.out, "architecture: llama\n"));
  CHECK(has(r.out, "name: tiny\n"));
  CHECK(has(r.out, "metadata: 6 keys\n"));
  CHECK(has(r.out, "tensors: 3 (F32 1, Q2_K 1, Q8_0 1)"));
  CHECK_FALSE(has(r.out, "tokenizer.ggml.tokens"));  // only with --metadata
  fs::remove_all(dir);
}

TEST_CASE("atlas gguf --metadata --tensors lists keys, long arrays summarised, and tensors",
          "[gguf][cli]") {
  const fs::path dir = tiny_file("gguf-lists");
  const auto r = run_atlas("gguf " + (dir / "tiny.gguf").string() + " --metadata --tensors");
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  CHECK(has(r.out, "llama.context_length"));
  CHECK(has(r.out, "UINT32          64\n"));
  CHECK(has(r.out, "FLOAT32         10000\n"));
  CHECK(has(r.out, "\"llama\"\n"));
  // 12 tokens: type, count, the first five and how many more.
  CHECK(
      has(r.out, "ARRAY[STRING]   12 [\"<unk>\", \"<s>\", \"</s>\", \"a\", \"b\", ... (7 more)]"));
  CHECK(has(r.out, "tensors (3):"));
  CHECK(has(r.out, "token_embd.weight      [1, 32]   Q8_0     34\n"));
  CHECK(has(r.out, "output_norm.weight     [6]       F32      24\n"));
  CHECK(has(r.out, "blk.0.ffn_down.weight  [1, 256]  Q2_K     84\n"));
  fs::remove_all(dir);
}

TEST_CASE("atlas gguf --dump-tensor writes the dequantized tensor as .npy", "[gguf][cli]") {
  const fs::path dir = tiny_file("gguf-dump");
  const fs::path out = dir / "embd.npy";
  const auto r = run_atlas("gguf " + (dir / "tiny.gguf").string() +
                           " --dump-tensor token_embd.weight --out " + out.string());
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  CHECK(has(r.out, "token_embd.weight [1, 32] float32 (from Q8_0)"));
  const atlas::Tensor t = atlas::read_npy(out.string());
  REQUIRE(t.shape == atlas::Shape{1, 32});
  for (int i = 0; i < 32; ++i) CHECK(t.data[size_t(i)] == float(i - 16) * 0.5f);  // d = 0.5

  const auto q2 = run_atlas("gguf " + (dir / "tiny.gguf").string() +
                            " --dump-tensor blk.0.ffn_down.weight --out " + out.string());
  CHECK(q2.code == 1);
  CHECK(has(q2.err,
            "tensor \"blk.0.ffn_down.weight\" has ggml type Q2_K (10), which is not "
            "supported; supported: F32, F16, BF16, Q8_0"));
  const auto missing = run_atlas("gguf " + (dir / "tiny.gguf").string() +
                                 " --dump-tensor nope --out " + out.string());
  CHECK(missing.code == 1);
  CHECK(has(missing.err, "no tensor \"nope\" (the file has 3 tensors)"));
  const auto no_out = run_atlas("gguf " + (dir / "tiny.gguf").string() + " --dump-tensor a");
  CHECK(no_out.code == 1);
  CHECK(has(no_out.err, "atlas gguf: --dump-tensor needs --out F.npy"));
  fs::remove_all(dir);
}

TEST_CASE("atlas gguf refuses a damaged file with one line naming it", "[gguf][cli]") {
  const fs::path dir = atlas_test::fresh_dir("gguf-bad");
  fs::create_directories(dir);
  gguf_test::Bytes b = gguf_test::tiny_model();
  b.resize(b.size() - 10);
  gguf_test::write_file(dir / "cut.gguf", b);
  const auto r = run_atlas("gguf " + (dir / "cut.gguf").string());
  CHECK(r.code == 1);
  CHECK(has(r.err, "atlas gguf: " + (dir / "cut.gguf").string() +
                       ": tensor 2 (\"blk.0.ffn_down.weight\"): data ["));
  CHECK(has(r.err, "ends past the file"));
  CHECK(r.out.empty());
  gguf_test::write_file(dir / "text.gguf", {'h', 'e', 'l', 'l', 'o'});
  const auto t = run_atlas("gguf " + (dir / "text.gguf").string());
  CHECK(t.code == 1);
  CHECK(has(t.err, "not a GGUF file: it starts with \"hell\", expected \"GGUF\""));
  fs::remove_all(dir);
}
