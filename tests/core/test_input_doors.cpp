// One door for every file read (core/formats/input_file.h): parts of a file read through
// InputFile; optional tokenizer files that are a FIFO or a folder refused by name instead of
// silently passed over; a GGUF file sized from its header alone; and a new corpus folder that
// a full disk stops leaves no empty folder behind. A FIFO case that blocked would hang; ctest's
// timeout catches that, and none of the readers here ever opens one.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "core/analysis/corpus_index.h"
#include "core/formats/gguf.h"
#include "core/formats/gguf_model.h"
#include "core/formats/hf/hf_checkpoint.h"
#include "core/formats/hf/hf_tokenizer_files.h"
#include "core/formats/input_file.h"
#include "core/formats/model_io.h"
#include "core/tensor/error.h"
#include "tests/core/gguf_model_writer.h"
#include "tests/core/hf_test_util.h"
#include "tests/core/write_failure_util.h"

using namespace atlas;
using Catch::Contains;
namespace fs = std::filesystem;

namespace {

void make_fifo_at(const fs::path& path) { REQUIRE(::mkfifo(path.c_str(), 0600) == 0); }

// A minimal Llama-2-style tokenizer.json: SentencePiece BPE behind a Metaspace pre-tokenizer.
nlohmann::json small_llama_tokenizer() {
  auto added = [](int id, const char* content) {
    return nlohmann::json{{"id", id}, {"content", content}, {"single_word", false},
                          {"lstrip", false}, {"rstrip", false}, {"normalized", false},
                          {"special", true}};
  };
  return {{"added_tokens", {added(0, "<unk>"), added(1, "<s>"), added(2, "</s>")}},
          {"normalizer", nullptr},
          {"pre_tokenizer", {{"type", "Metaspace"}, {"replacement", "\xe2\x96\x81"},
                             {"prepend_scheme", "first"}, {"split", false}}},
          {"post_processor", nullptr},
          {"model", {{"type", "BPE"}, {"unk_token", "<unk>"}, {"fuse_unk", true},
                     {"byte_fallback", false},
                     {"vocab", {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}, {"\xe2\x96\x81", 3},
                                {"a", 4}, {"b", 5}}},
                     {"merges", nlohmann::json::array()}}}};
}

}  // namespace

TEST_CASE("input doors: InputFile reads parts of a file and refuses what is not one",
          "[input-file]") {
  const fs::path dir = hf_test::fresh_dir("input-doors-parts");
  std::string bytes;
  for (int i = 0; i < 100000; ++i) bytes.push_back(char((i * 31) % 251));
  hf_test::write_text(dir / "data.bin", bytes);
  {
    const InputFile f((dir / "data.bin").string(), InputKind::Weights);
    CHECK(f.size() == bytes.size());
    CHECK(f.read_at(0, 10) == bytes.substr(0, 10));
    CHECK(f.read_at(70000, 5000) == bytes.substr(70000, 5000));
    CHECK(f.read_at(99990, 100) == bytes.substr(99990));  // cut at the end of the file
    CHECK(f.read_at(200000, 10).empty());
  }
  make_fifo_at(dir / "pipe");
  CHECK_THROWS_WITH(InputFile((dir / "pipe").string(), InputKind::Weights),
                    Contains("pipe: is a named pipe (FIFO), not a regular file"));
  CHECK_THROWS_WITH(InputFile(dir.string(), InputKind::Weights), Contains("is a folder, not a file"));
  {
    std::ofstream(dir / "big.atlas").close();
    fs::resize_file(dir / "big.atlas", 5 << 20);
  }
  CHECK_THROWS_WITH(InputFile((dir / "big.atlas").string(), InputKind::Workspace),
                    Contains("big.atlas: is 5.0 MB, over the 4.0 MB limit for a workspace"));
  fs::remove_all(dir);
}

TEST_CASE("input doors: a tokenizer_config.json that is a FIFO or a folder is refused by name",
          "[input-file][hf]") {
  const fs::path dir = hf_test::fresh_dir("input-doors-tokenizer");
  // BERT: vocab.txt + tokenizer_config.json.
  hf_test::write_bert_vocab(dir, {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b"});
  REQUIRE_NOTHROW(read_hf_tokenizer(dir.string(), "bert", "{}"));  // absent: the defaults
  make_fifo_at(dir / "tokenizer_config.json");
  CHECK_THROWS_WITH(read_hf_tokenizer(dir.string(), "bert", "{}"),
                    Contains("tokenizer_config.json: is a named pipe (FIFO), not a regular file"));
  fs::remove(dir / "tokenizer_config.json");
  fs::create_directory(dir / "tokenizer_config.json");
  CHECK_THROWS_WITH(read_hf_tokenizer(dir.string(), "bert", "{}"),
                    Contains("tokenizer_config.json: is a folder, not a file"));
  fs::remove(dir / "tokenizer_config.json");
  fs::create_symlink(dir / "gone.json", dir / "tokenizer_config.json");
  CHECK_THROWS_WITH(read_hf_tokenizer(dir.string(), "bert", "{}"),
                    Contains("tokenizer_config.json: no such file"));

  // Llama: tokenizer.json + tokenizer_config.json.
  const fs::path llama = dir / "llama";
  fs::create_directories(llama);
  hf_test::write_text(llama / "tokenizer.json", small_llama_tokenizer().dump());
  REQUIRE_NOTHROW(read_hf_tokenizer(llama.string(), "llama", "{}"));
  make_fifo_at(llama / "tokenizer_config.json");
  CHECK_THROWS_WITH(read_hf_tokenizer(llama.string(), "llama", "{}"),
                    Contains("tokenizer_config.json: is a named pipe (FIFO)"));
  fs::remove(llama / "tokenizer_config.json");
  fs::create_directory(llama / "tokenizer_config.json");
  CHECK_THROWS_WITH(read_hf_tokenizer(llama.string(), "llama", "{}"),
                    Contains("tokenizer_config.json: is a folder, not a file"));

  // GPT-2: a tokenizer.json that is a FIFO is not passed over for vocab.json + merges.txt.
  const fs::path gpt2 = hf_test::tiny_gpt2_dir("input-doors-gpt2");
  REQUIRE_NOTHROW(read_hf_tokenizer(gpt2.string(), "gpt2", "{}"));
  make_fifo_at(gpt2 / "tokenizer.json");
  CHECK_THROWS_WITH(read_hf_tokenizer(gpt2.string(), "gpt2", "{}"),
                    Contains("tokenizer.json: is a named pipe (FIFO)"));
  fs::remove_all(gpt2);
  fs::remove_all(dir);
}

TEST_CASE("input doors: a GGUF file is described from its header alone", "[input-file][gguf]") {
  gguf_test::Arch a;
  gguf_test::File file = gguf_test::make_file(a);
  gguf_test::add_byte_level_tokenizer(file);
  // One more tensor of 1 GiB at the end, its data a hole: the header is intact, the bytes zero.
  file.writer.tensor("blk.0.zz_big.weight", {1024, 262144}, gguf_test::T_F32, {});
  const fs::path path = gguf_test::write(file, "header-only");
  fs::resize_file(path, fs::file_size(path) + (uint64_t(1) << 30));
  const GgufFile f = GgufFile::open_header(path.string());
  CHECK(f.tensors().size() == file.w.size() + 1);
  CHECK(f.tensor("blk.0.zz_big.weight").n_bytes == uint64_t(1) << 30);
  CHECK(f.get_string("general.architecture") == "llama");
  // A small tensor is read on request, equal to the values written.
  const Tensor norm = f.read_tensor("output_norm.weight");
  REQUIRE(norm.data.size() == size_t(a.d));
  for (int64_t i = 0; i < a.d; ++i) CHECK(norm.data[size_t(i)] == file.w.at("output_norm.weight").v[size_t(i)]);
  CHECK_THROWS_WITH(f.read_packed("token_embd.weight"), Contains("opened for its header only"));
  const ModelHeader h = read_gguf_model_header(path.string());
  CHECK(h.config.d_model == a.d);
  CHECK(h.held.bytes() > double(uint64_t(1) << 30));
  CHECK_THAT(h.held.detail(), Contains("1.0 GB of float32 matrices"));
  // The same checks as open(): data past the file is refused by name.
  fs::resize_file(path, fs::file_size(path) - 4096);
  CHECK_THROWS_WITH(GgufFile::open_header(path.string()), Contains("ends past the file"));
  const fs::path fifo = path.parent_path() / "pipe.gguf";
  make_fifo_at(fifo);
  CHECK_THROWS_WITH(GgufFile::open_header(fifo.string()), Contains("named pipe"));
  fs::remove_all(path.parent_path());
}

TEST_CASE("input doors: a GGUF header read alone gives the in-memory parser's answer, cut or flipped",
          "[input-file][gguf]") {
  // The header-only reader fetches the file's bytes as it reaches them; at every cut and after
  // byte flips it must say what the parser of the whole file in memory says, word for word.
  gguf_test::Arch a;
  a.layers = 1;
  gguf_test::File file = gguf_test::make_file(a);
  gguf_test::add_byte_level_tokenizer(file);
  const gguf_test::Bytes whole = file.writer.build();
  const fs::path dir = hf_test::fresh_dir("gguf-header-differential");
  const fs::path path = dir / "m.gguf";
  auto answer = [](const std::function<GgufFile()>& open) {
    try {
      const GgufFile f = open();
      return "ok: " + std::to_string(f.tensors().size()) + " tensors, " +
             std::to_string(f.metadata().size()) + " keys, data at " + std::to_string(f.data_offset());
    } catch (const AtlasError& e) {
      return std::string(e.what());
    }
  };
  auto compare = [&](const gguf_test::Bytes& bytes) {
    gguf_test::write_file(path, bytes);
    const std::string alone = answer([&] { return GgufFile::open_header(path.string()); });
    const std::string whole_file = answer([&] { return GgufFile::parse(bytes.data(), bytes.size(), path.string()); });
    REQUIRE(alone == whole_file);
  };
  for (size_t cut = 0; cut <= whole.size(); cut += (cut < 2048 ? 1 : 97))
    compare(gguf_test::Bytes(whole.begin(), whole.begin() + std::ptrdiff_t(cut)));
  uint32_t state = 12345;
  const size_t header = file.writer.header().size();
  for (int i = 0; i < 400; ++i) {
    gguf_test::Bytes flipped = whole;
    for (int k = 0; k < 3; ++k) {
      state = state * 1664525u + 1013904223u;
      flipped[(state >> 8) % header] ^= uint8_t(1u << ((state >> 4) % 8));
    }
    compare(flipped);
  }
  fs::remove_all(dir);
}

TEST_CASE("input doors: a new corpus folder that a full disk stops leaves no folder",
          "[input-file][corpus]") {
  const Model model = load_model("demo:induction");
  const fs::path dir = write_failure::fresh_dir("corpus-full-disk");
  hf_test::write_text(dir / "corpus.txt", "abcabc\nxyzxyz\n");
  CorpusRunOptions o;
  o.model_argument = "demo:induction";
  o.corpus_path = (dir / "corpus.txt").string();
  o.out_dir = (dir / "runs" / "new").string();
  o.settings.top = 3;
  // Every file may hold one byte: the run's first manifest cannot be written.
  const std::string message = write_failure::failure_under_limit(1, [&] { run_corpus(model, o); });
  CHECK_THAT(message, Contains("nothing was written"));
  CHECK_FALSE(fs::exists(o.out_dir));
  CHECK(write_failure::leftovers(dir / "runs").empty());
  // With room, the same call makes the run.
  CHECK(run_corpus(model, o).finished);
  CHECK(fs::exists(fs::path(o.out_dir) / "manifest.json"));

  write_failure::TinyTmpfs disk("corpus-tmpfs", "1m");
  if (disk.mounted()) {
    disk.fill_leaving(0);
    CorpusRunOptions full = o;
    full.out_dir = (disk.dir() / "new").string();
    CHECK_THROWS_WITH(run_corpus(model, full), Contains("no space left") || Contains("nothing was written"));
    CHECK_FALSE(fs::exists(full.out_dir));
    CHECK(write_failure::leftovers(disk.dir()).empty());
  } else {
    WARN("cannot mount a tmpfs here: the full disk is simulated by RLIMIT_FSIZE only");
  }
  fs::remove_all(dir);
}
