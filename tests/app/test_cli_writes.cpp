// The real `atlas` executable never destroys or corrupts an existing file when a write fails:
// each writer is run under a file-size limit (`ulimit -f`; atlas ignores SIGXFSZ, so write()
// fails with EFBIG part-way, as on a full disk) over an earlier output, which must stay byte-identical,
// with a non-zero exit and a message naming the file. Model folders are not overwritten without
// --force; dumps replace an earlier dump as a whole and refuse any other folder.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <set>
#include <sstream>

#include "tests/app/child_process.h"
#include "tests/app/cli_runner.h"
#include "tests/core/write_failure_util.h"

namespace fs = std::filesystem;
using atlas_test::Output;
using atlas_test::read_all;
using atlas_test::run_atlas;
using Catch::Contains;
using write_failure::leftovers;
using write_failure::snapshot;
using write_failure::write_bytes;

namespace {

// `atlas ARGS` (split at spaces: no quoting) with every file it writes limited to `kib` KiB.
// SIGXFSZ is at its default in the child: only atlas's own ignoring of it turns a write past
// the limit into an EFBIG the writer reports, instead of death by the signal (exit 153).
Output run_atlas_limited(int kib, const std::string& args) {
  atlas_test::Child c;
  std::istringstream words(args);
  for (std::string w; words >> w;) c.args.push_back(w);
  c.file_size_limit = 1024LL * kib;
  return atlas_test::run_child(c);
}

// 30 tokens: every export format is well above the 1 KiB limit.
const std::string kExport = "export preset:tiny-encoder --text abcdefghijklmnopqrstuvwxyzabcd ";

void old_export_survives_failed_write(const std::string& format) {
  const fs::path dir = write_failure::fresh_dir("cli-export-" + format);
  const fs::path out = dir / ("figure." + format);
  const Output first = run_atlas(kExport + "--head 0 --out " + out.string());
  if (atlas_test::no_ui(first)) {
    WARN("atlas was built without the Qt UI: export not tested");
    return;
  }
  INFO(first.err);
  REQUIRE(first.code == 0);
  const std::string before = read_all(out);
  REQUIRE(before.size() > 1024);

  const Output failed = run_atlas_limited(1, kExport + "--head 1 --out " + out.string());
  CHECK(failed.code != 0);
  CHECK_THAT(failed.err, Contains("cannot write '" + out.string() + "'") &&
                             Contains("write failed") && Contains("the old file is kept"));
  CHECK(read_all(out) == before);
  CHECK(leftovers(dir).empty());
  // Without the limit the same export replaces the file.
  REQUIRE(run_atlas(kExport + "--head 1 --out " + out.string()).code == 0);
  CHECK(read_all(out) != before);
  fs::remove_all(dir);
}

std::set<std::string> npy_files(const fs::path& dir) {
  std::set<std::string> s;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".npy") s.insert(e.path().filename().string());
  return s;
}

const std::string kTrain =
    "train --preset tiny-decoder --d-model 16 --d-ff 32 --batch 4 --length 4 --task copy "
    "--eval 0 --json ";

}  // namespace

TEST_CASE("The old file survives a failed SVG export", "[cli][atomic][export]") {
  old_export_survives_failed_write("svg");
}
TEST_CASE("The old file survives a failed PDF export", "[cli][atomic][export]") {
  old_export_survives_failed_write("pdf");
}
TEST_CASE("The old file survives a failed PNG export", "[cli][atomic][export]") {
  old_export_survives_failed_write("png");
}
TEST_CASE("The old file survives a failed CSV export", "[cli][atomic][export]") {
  old_export_survives_failed_write("csv");
}
TEST_CASE("The old file survives a failed .npy export", "[cli][atomic][export]") {
  old_export_survives_failed_write("npy");
}

TEST_CASE("The old model survives a failed atlas init --force", "[cli][atomic]") {
  const fs::path root = write_failure::fresh_dir("cli-init");
  const fs::path dir = root / "model";
  REQUIRE(run_atlas("init --preset tiny-decoder --seed 1 --out " + dir.string()).code == 0);
  const auto before = snapshot(dir);

  const Output failed =
      run_atlas_limited(8, "init --preset tiny-decoder --seed 2 --force --out " + dir.string());
  CHECK(failed.code != 0);
  CHECK_THAT(failed.err, Contains(dir.string() + "/model.safetensors: write failed") &&
                             Contains(dir.string() + " is left as it was"));
  CHECK(snapshot(dir) == before);
  CHECK(leftovers(root).empty());
  CHECK(run_atlas("run " + dir.string() + " --text abc").code == 0);
  fs::remove_all(root);
}

TEST_CASE("atlas init refuses an existing model without --force and replaces it with it", "[cli][atomic]") {
  const fs::path root = write_failure::fresh_dir("cli-init-force");
  const fs::path dir = root / "model";
  REQUIRE(run_atlas("init --preset tiny-decoder --seed 1 --out " + dir.string()).code == 0);
  const auto before = snapshot(dir);

  const Output refused = run_atlas("init --preset tiny-encoder --out " + dir.string());
  CHECK(refused.code != 0);
  CHECK_THAT(refused.err, Contains("--out " + dir.string() + " already holds a model") &&
                              Contains("pass --force"));
  CHECK(snapshot(dir) == before);

  const Output forced = run_atlas("init --preset tiny-encoder --force --out " + dir.string());
  INFO(forced.err);
  REQUIRE(forced.code == 0);
  CHECK(snapshot(dir) != before);
  const Output info = run_atlas("info " + dir.string());
  CHECK(info.code == 0);
  CHECK_THAT(info.out, Contains("encoder"));
  CHECK(leftovers(root).empty());

  // A folder holding anything else is never replaced, --force or not.
  write_bytes(dir / "notes.txt", "mine");
  const auto with_notes = snapshot(dir);
  const Output foreign = run_atlas("init --preset tiny-decoder --force --out " + dir.string());
  CHECK(foreign.code != 0);
  CHECK_THAT(foreign.err, Contains(dir.string() + ": holds notes.txt"));
  CHECK(snapshot(dir) == with_notes);
  fs::remove_all(root);
}

TEST_CASE("atlas train refuses an existing model without --force; --resume saves back into its folder",
          "[cli][atomic][train]") {
  const fs::path root = write_failure::fresh_dir("cli-train-force");
  const fs::path dir = root / "ckpt";
  REQUIRE(run_atlas(kTrain + "--steps 2 --out " + dir.string()).code == 0);
  const auto before = snapshot(dir);

  const Output refused = run_atlas(kTrain + "--steps 2 --seed 5 --out " + dir.string());
  CHECK(refused.code != 0);
  CHECK_THAT(refused.err, Contains("--out " + dir.string() + " already holds a model") &&
                              Contains("pass --force") && Contains("--resume " + dir.string()));
  CHECK(snapshot(dir) == before);

  // Continuing the run in its own folder needs no --force.
  const Output resumed = run_atlas("train --resume " + dir.string() + " --steps 3 --eval 0 --json");
  INFO(resumed.err);
  REQUIRE(resumed.code == 0);
  CHECK(nlohmann::json::parse(read_all(dir / "train_state.json"))["step"] == 3);

  const Output forced = run_atlas(kTrain + "--steps 2 --seed 5 --force --out " + dir.string());
  REQUIRE(forced.code == 0);
  CHECK(nlohmann::json::parse(read_all(dir / "train_state.json"))["step"] == 2);
  CHECK(run_atlas("run " + dir.string() + " --text 'ab|ab'").code == 0);
  CHECK(leftovers(root).empty());
  fs::remove_all(root);
}

TEST_CASE("The old checkpoint survives a failed atlas train --force", "[cli][atomic][train]") {
  const fs::path root = write_failure::fresh_dir("cli-train");
  const fs::path dir = root / "ckpt";
  REQUIRE(run_atlas(kTrain + "--steps 2 --out " + dir.string()).code == 0);
  const auto before = snapshot(dir);

  const Output failed = run_atlas_limited(4, kTrain + "--steps 3 --force --out " + dir.string());
  CHECK(failed.code != 0);
  CHECK_THAT(failed.err, Contains(dir.string() + "/") && Contains("write failed") &&
                             Contains(dir.string() + " is left as it was"));
  CHECK(snapshot(dir) == before);
  CHECK(leftovers(root).empty());
  CHECK(run_atlas("train --resume " + dir.string() + " --steps 3 --eval 0 --json").code == 0);
  fs::remove_all(root);
}

TEST_CASE("The old dump survives a failed atlas run --dump", "[cli][atomic][dump]") {
  const fs::path root = write_failure::fresh_dir("cli-dump");
  const fs::path dir = root / "dump";
  REQUIRE(run_atlas("run preset:tiny-decoder --text ab --dump " + dir.string()).code == 0);
  const auto before = snapshot(dir);

  const Output failed = run_atlas_limited(
      4, "run preset:tiny-encoder-decoder --text abcdefghijklmnop --target abcd --dump " + dir.string());
  CHECK(failed.code != 0);
  CHECK_THAT(failed.err, Contains(dir.string() + "/") && Contains(".npy: write failed") &&
                             Contains(dir.string() + " is left as it was"));
  CHECK(snapshot(dir) == before);
  CHECK(leftovers(root).empty());
  fs::remove_all(root);
}

TEST_CASE("atlas run --dump replaces an earlier dump whole and refuses any other folder", "[cli][atomic][dump]") {
  const fs::path root = write_failure::fresh_dir("cli-redump");
  const fs::path dir = root / "dump";
  REQUIRE(run_atlas("run preset:tiny-encoder-decoder --text abcd --target ab --dump " + dir.string()).code == 0);
  write_bytes(dir / "stale.npy", read_all(dir / "encoder.layer0.attn.npy"));

  REQUIRE(run_atlas("run preset:tiny-decoder --text abc --dump " + dir.string()).code == 0);
  std::set<std::string> listed;
  const nlohmann::json manifest = nlohmann::json::parse(read_all(dir / "manifest.json"));
  for (const auto& a : manifest["arrays"]) listed.insert(a["file"].get<std::string>());
  CHECK(npy_files(dir) == listed);
  CHECK_FALSE(fs::exists(dir / "stale.npy"));
  CHECK_FALSE(fs::exists(dir / "encoder.layer0.attn.npy"));

  const fs::path mine = root / "mine";
  fs::create_directories(mine);
  write_bytes(mine / "notes.txt", "mine");
  const Output refused = run_atlas("run preset:tiny-decoder --text abc --dump " + mine.string());
  CHECK(refused.code != 0);
  CHECK_THAT(refused.err, Contains(mine.string() + ": holds notes.txt") &&
                              Contains("nothing was changed"));
  CHECK(snapshot(mine) == (std::map<std::string, std::string>{{"notes.txt", "mine"}}));
  CHECK(leftovers(root).empty());
  fs::remove_all(root);
}

TEST_CASE("atlas init --force on a full disk (tmpfs) keeps the old model and says so", "[cli][atomic]") {
  write_failure::TinyTmpfs disk("cli-tmpfs", "4m");
  if (!disk.mounted()) {
    WARN("cannot mount a tmpfs here (needs root): the full-disk case is covered by the "
         "ulimit -f tests only");
    return;
  }
  const fs::path dir = disk.dir() / "model";
  REQUIRE(run_atlas("init --preset tiny-decoder --seed 1 --out " + dir.string()).code == 0);
  const auto before = snapshot(dir);
  disk.fill_leaving(64 * 1024);
  const Output failed = run_atlas("init --preset tiny-decoder --seed 2 --force --out " + dir.string());
  CHECK(failed.code != 0);
  CHECK_THAT(failed.err, Contains(dir.string() + "/model.safetensors") &&
                             Contains("no space left on the device") &&
                             Contains("is left as it was"));
  CHECK(snapshot(dir) == before);
  fs::remove(disk.dir() / "filler");
  CHECK(leftovers(disk.dir()).empty());
}
