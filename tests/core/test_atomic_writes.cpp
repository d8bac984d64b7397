// No failed write may destroy or corrupt an existing file: model folders, training checkpoints
// and dumps are written as a whole (core/formats/output_folder.h), so a write that fails part-way
// (a file-size limit, a full disk) leaves the earlier folder byte-identical and loadable, with no
// temporary left beside it. The failure is made deterministic with RLIMIT_FSIZE, and with a
// really full tmpfs where one can be mounted.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <set>

#include "core/formats/atomic_file.h"
#include "core/formats/dump.h"
#include "core/formats/model_io.h"
#include "core/formats/npy.h"
#include "core/formats/output_folder.h"
#include "core/model/params.h"
#include "core/model/presets.h"
#include "core/tensor/error.h"
#include "core/train/train_loop.h"
#include "tests/core/write_failure_util.h"

using namespace atlas;
using Catch::Contains;
using write_failure::failure_under_limit;
using write_failure::leftovers;
using write_failure::read_bytes;
using write_failure::snapshot;
using write_failure::write_bytes;
namespace fs = std::filesystem;

namespace {

Model seeded_preset_model(const char* preset, uint64_t seed) {
  const ModelConfig c = preset_config(preset);
  return Model(c, init_params(c, seed));
}

train::Trainer tiny_trainer() {
  ModelConfig c = preset_config("tiny-encoder-decoder");
  c.d_model = 16;
  c.d_ff = 32;
  train::TrainOptions o;
  o.task = "copy";
  o.task_options.length = 4;
  o.steps = 10;
  o.batch = 2;
  o.schedule.warmup = 5;
  return train::Trainer(c, o);
}

// The .npy files a dump folder holds, and those its manifest lists.
std::set<std::string> npy_files(const fs::path& dir) {
  std::set<std::string> s;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".npy") s.insert(e.path().filename().string());
  return s;
}

std::set<std::string> manifest_files(const fs::path& dir) {
  std::set<std::string> s;
  const nlohmann::json manifest = nlohmann::json::parse(read_bytes(dir / "manifest.json"));
  for (const auto& a : manifest["arrays"]) s.insert(a["file"].get<std::string>());
  return s;
}

}  // namespace

TEST_CASE("The old file survives every failed write: model folder (save_model)", "[atomic]") {
  const fs::path root = write_failure::fresh_dir("model");
  const fs::path dir = root / "m";
  const Model old_model = seeded_preset_model("tiny-decoder", 1);
  save_model(old_model, dir.string());
  const auto before = snapshot(dir);

  // 4 KiB: config.json fits, model.safetensors (730 KB) does not.
  const std::string error = failure_under_limit(4096, [&] {
    save_model(seeded_preset_model("tiny-decoder", 2), dir.string());
  });
  CHECK_THAT(error, Contains(dir.string() + "/model.safetensors") && Contains("write failed") &&
                        Contains(dir.string() + " is left as it was"));
  CHECK_THAT(error, !Contains(".tmp"));  // the user's path, not the staging folder's
  CHECK(snapshot(dir) == before);
  CHECK(leftovers(root).empty());
  CHECK(leftovers(dir).empty());
  const Model back = load_model(dir.string());
  CHECK(back.params().at("embed.tokens").data == old_model.params().at("embed.tokens").data);
  fs::remove_all(root);
}

TEST_CASE("The old file survives every failed write: training checkpoint (Trainer::save)", "[atomic][train]") {
  const fs::path root = write_failure::fresh_dir("checkpoint");
  const fs::path dir = root / "ckpt";
  train::Trainer trainer = tiny_trainer();
  trainer.step();
  trainer.save(dir.string());
  const auto before = snapshot(dir);
  REQUIRE(before.count("train_state.json") == 1);
  REQUIRE(before.count("optimizer.safetensors") == 1);

  trainer.step();
  const std::string error = failure_under_limit(4096, [&] { trainer.save(dir.string()); });
  CHECK_THAT(error, Contains(dir.string() + "/") && Contains("write failed") &&
                        Contains("is left as it was"));
  CHECK(snapshot(dir) == before);
  CHECK(leftovers(root).empty());
  // Still the step-1 checkpoint, whole: it resumes.
  CHECK(train::Trainer::resume(dir.string()).steps_done() == 1);

  trainer.save(dir.string());  // without the limit the new checkpoint replaces it
  CHECK(train::Trainer::resume(dir.string()).steps_done() == 2);
  CHECK(leftovers(root).empty());
  fs::remove_all(root);
}

TEST_CASE("The old file survives every failed write: dump (write_trace_dump)", "[atomic][dump]") {
  const fs::path root = write_failure::fresh_dir("dump");
  const fs::path dir = root / "d";
  const Model small = seeded_preset_model("tiny-decoder", 1);
  write_dump(dir.string(), small, small.run("ab", "", RunOptions{}));
  const auto before = snapshot(dir);

  const Model big = seeded_preset_model("tiny-encoder-decoder", 1);
  const RunResult r = big.run("abcdefghijklmnop", "abcd", RunOptions{});
  const std::string error = failure_under_limit(4096, [&] { write_dump(dir.string(), big, r); });
  CHECK_THAT(error, Contains(dir.string() + "/") && Contains(".npy: write failed") &&
                        Contains("is left as it was"));
  CHECK(snapshot(dir) == before);
  CHECK(leftovers(root).empty());
  CHECK(read_trace_dump(dir.string()).trace.names() == small.run("ab", "", RunOptions{}).trace.names());
  fs::remove_all(root);
}

TEST_CASE("A re-dump replaces an earlier dump as a whole: no stale array survives", "[atomic][dump]") {
  const fs::path root = write_failure::fresh_dir("redump");  // own parent: /tmp is shared
  const fs::path dir = root / "dump";
  const Model big = seeded_preset_model("tiny-encoder-decoder", 1);
  write_dump(dir.string(), big, big.run("abcd", "ab", RunOptions{}));
  write_bytes(dir / "extra.stale.npy", read_bytes(dir / "encoder.layer0.attn.npy"));
  REQUIRE(fs::exists(dir / "encoder.layer0.attn.npy"));

  const Model small = seeded_preset_model("tiny-decoder", 1);
  const RunResult r = small.run("abc", "", RunOptions{});
  write_dump(dir.string(), small, r);
  CHECK_FALSE(fs::exists(dir / "extra.stale.npy"));
  CHECK_FALSE(fs::exists(dir / "encoder.layer0.attn.npy"));
  CHECK(npy_files(dir) == manifest_files(dir));
  CHECK(npy_files(dir).size() == r.trace.arrays.size());
  CHECK(leftovers(root).empty());
  CHECK(read_trace_dump(dir.string()).trace.names() == r.trace.names());
  fs::remove_all(root);
}

TEST_CASE("A dump into a folder that is not a dump is refused and nothing is deleted", "[atomic][dump]") {
  const fs::path dir = write_failure::fresh_dir("notadump");
  const Model m = seeded_preset_model("tiny-decoder", 1);
  const RunResult r = m.run("ab", "", RunOptions{});

  SECTION("a foreign file") {
    write_bytes(dir / "notes.txt", "mine");
    write_bytes(dir / "weights.npy", "also mine");
    const auto before = snapshot(dir);
    CHECK_THROWS_WITH(write_dump(dir.string(), m, r),
                      Contains(dir.string() + ": holds notes.txt") && Contains("not part of a dump") &&
                          Contains("nothing was changed"));
    CHECK(snapshot(dir) == before);
  }
  SECTION(".npy files without a dump manifest") {
    write_bytes(dir / "weights.npy", "mine");
    write_bytes(dir / "manifest.json", R"({"format": "something-else"})");
    const auto before = snapshot(dir);
    CHECK_THROWS_WITH(write_dump(dir.string(), m, r),
                      Contains(dir.string() + ": is not empty and is not an earlier dump"));
    CHECK(snapshot(dir) == before);
  }
  SECTION("a file where the folder should be") {
    write_bytes(dir / "file", "mine");
    CHECK_THROWS_WITH(write_dump((dir / "file").string(), m, r),
                      Contains("file: exists and is not a folder"));
    CHECK(read_bytes(dir / "file") == "mine");
  }
  CHECK(leftovers(dir).empty());
  fs::remove_all(dir);
}

TEST_CASE("save_model replaces a model folder whole and never one holding other files", "[atomic]") {
  const fs::path root = write_failure::fresh_dir("replace");
  const fs::path dir = root / "m";
  save_model(seeded_preset_model("tiny-decoder", 1), dir.string());
  write_bytes(dir / "model.safetensors.tmp.99999.0", "an interrupted writer's leftover");
  const Model newer = seeded_preset_model("tiny-encoder", 2);
  CHECK(check_model_destination(dir.string()));
  save_model(newer, dir.string());
  CHECK(load_model(dir.string()).config().architecture == Architecture::Encoder);
  CHECK_FALSE(fs::exists(dir / "model.safetensors.tmp.99999.0"));  // gone with the old folder

  write_bytes(dir / "README.md", "my notes");
  const auto before = snapshot(dir);
  CHECK_THROWS_WITH(save_model(seeded_preset_model("tiny-decoder", 3), dir.string()),
                    Contains(dir.string() + ": holds README.md") && Contains("nothing was changed"));
  CHECK(snapshot(dir) == before);
  CHECK_FALSE(check_model_destination((root / "new").string()));
  CHECK(leftovers(root).empty());
  fs::remove_all(root);
}

TEST_CASE("replace_folder: a failing fill leaves the folder and no staging folder", "[atomic]") {
  const fs::path root = write_failure::fresh_dir("fill");
  const fs::path dir = root / "out";
  fs::create_directories(dir);
  write_bytes(dir / "a", "old");
  std::string staging_seen;
  try {
    replace_folder(dir.string() + "/", [&](const std::string& staging) {
      staging_seen = staging;
      write_bytes(fs::path(staging) / "a", "new");
      throw AtlasError(staging + "/b: cannot encode");
    });
    FAIL("replace_folder did not rethrow");
  } catch (const AtlasError& e) {
    CHECK(std::string(e.what()) == dir.string() + "/b: cannot encode; " + dir.string() +
                                       " is left as it was");
  }
  CHECK_FALSE(staging_seen.empty());
  CHECK_FALSE(fs::exists(staging_seen));
  CHECK(read_bytes(dir / "a") == "old");
  CHECK(leftovers(root).empty());

  replace_folder(dir.string(), [&](const std::string& staging) {
    write_bytes(fs::path(staging) / "b", "new");
  });
  CHECK_FALSE(fs::exists(dir / "a"));
  CHECK(read_bytes(dir / "b") == "new");
  CHECK(leftovers(root).empty());
  fs::remove_all(root);
}

TEST_CASE("A full disk (tmpfs) keeps the old model and says so", "[atomic]") {
  write_failure::TinyTmpfs disk("tmpfs-model", "4m");
  if (!disk.mounted()) {
    WARN("cannot mount a tmpfs here (needs root): the full-disk case is covered by the "
         "RLIMIT_FSIZE tests only");
    return;
  }
  const fs::path dir = disk.dir() / "m";
  save_model(seeded_preset_model("tiny-decoder", 1), dir.string());  // 730 KB
  const auto before = snapshot(dir);
  disk.fill_leaving(64 * 1024);
  try {
    save_model(seeded_preset_model("tiny-decoder", 2), dir.string());
    FAIL("save_model succeeded on a full disk");
  } catch (const AtlasError& e) {
    CHECK_THAT(e.what(), Contains(dir.string() + "/model.safetensors") &&
                             Contains("no space left on the device") &&
                             Contains("is left as it was"));
  }
  CHECK(snapshot(dir) == before);
  fs::remove(disk.dir() / "filler");
  CHECK(leftovers(disk.dir()).empty());
  CHECK(load_model(dir.string()).config().n_layers == 2);
}

TEST_CASE("A device or pipe at the target path is refused, never replaced by a file", "[atomic]") {
  // Renaming over /dev/full as root once replaced the device with a regular file. The test uses
  // a private node in its own folder (a character device when it may create one, as root, with
  // /dev/full's numbers; else a FIFO), so a regression cannot damage the machine's /dev.
  const fs::path dir = fs::temp_directory_path() / ("atlas-atomic-device-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path node = dir / "full";
  const bool device = ::mknod(node.c_str(), S_IFCHR | 0666, ::makedev(1, 7)) == 0;
  if (!device) REQUIRE(::mkfifo(node.c_str(), 0666) == 0);
  CHECK_THROWS_WITH(write_file_atomically(node.string(), "data"),
                    Contains("full: exists and is not a regular file"));
  struct stat st {};
  REQUIRE(::lstat(node.c_str(), &st) == 0);
  CHECK((device ? S_ISCHR(st.st_mode) : S_ISFIFO(st.st_mode)));  // still the node, not a file
  CHECK(leftovers(dir).empty());
  // The same through the npy writer every export uses.
  CHECK_THROWS_WITH(write_npy(node.string(), Tensor({2}, 1.0f), DType::F32),
                    Contains("not a regular file"));
  fs::remove_all(dir);
}
