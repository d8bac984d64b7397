// Every write of `atlas` and `attention-atlas` is checked (docs/bad-input.md, "Writing files"):
//  - standard output to /dev/full (every write fails with ENOSPC, as on a full disk) is exit 1
//    and one line on stderr, for every verb the CLI has (read from `atlas --help`, which lists
//    the verb table), with its --help and with its real output;
//  - under a file-size limit (`ulimit -f`) with SIGXFSZ at its default in the child, so only
//    the binary's own ignoring of the signal saves it, every file writer fails by name with
//    exit 1 (never 153, death by SIGXFSZ) and leaves no temporary file; so does the app's
//    screenshot, and standard output redirected to a file;
//  - a closed standard output (>&-) is reported, and printed text never lands in a file the
//    process opened in its place.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/app/child_process.h"
#include "tests/app/cli_runner.h"
#include "tests/core/gguf_test_util.h"
#include "tests/core/write_failure_util.h"

namespace fs = std::filesystem;
using atlas_test::Child;
using atlas_test::Output;
using atlas_test::run_atlas_to;
using atlas_test::run_child;
using Catch::Contains;

namespace {

// The verbs `atlas --help` lists: the lines of its "verbs:" block that name one.
std::vector<std::string> listed_verbs() {
  Child c;
  c.args = {"--help"};
  const Output help = run_child(c);
  REQUIRE(help.code == 0);
  std::vector<std::string> verbs;
  std::istringstream lines(help.out);
  bool in_block = false;
  for (std::string line; std::getline(lines, line);) {
    if (line == "verbs:") {
      in_block = true;
    } else if (in_block && line.empty()) {
      break;
    } else if (in_block && line.size() > 2 && line.compare(0, 2, "  ") == 0 && line[2] != ' ') {
      verbs.push_back(line.substr(2, line.find(' ', 2) - 2));
    }
  }
  return verbs;
}

Output atlas_captured(const std::vector<std::string>& args) {
  Child c;
  c.args = args;
  return run_child(c);
}

std::string joined(const std::vector<std::string>& args) {
  std::string s;
  for (const auto& a : args) s += (s.empty() ? "" : " ") + a;
  return s;
}

// Files and folders the real-output cases read, made once per test run.
struct WriteFixtures {
  fs::path dir, gguf, corpus_file, corpus_run, model, ntm_controls;
};

const WriteFixtures& write_fixtures() {
  static const WriteFixtures f = [] {
    WriteFixtures w;
    w.dir = write_failure::fresh_dir("every-write-fixtures");
    w.gguf = w.dir / "tiny.gguf";
    gguf_test::write_file(w.gguf, gguf_test::tiny_model());
    w.corpus_file = w.dir / "corpus.txt";
    std::ofstream(w.corpus_file) << "abcdabcd\nqwertyqwerty\nabab\n";
    w.corpus_run = w.dir / "corpus-run";
    const Output run = atlas_captured({"corpus", "demo:induction", "--file", w.corpus_file.string(),
                                       "--out", w.corpus_run.string(), "--top", "4"});
    INFO(run.err);
    REQUIRE(run.code == 0);
    w.ntm_controls = w.dir / "ntm.json";  // one read step (as in test_memory_family_cli)
    std::ofstream(w.ntm_controls) << R"({"memory": [[1, 0], [0, 1], [0, 0]], "heads": [{"name": "read0"}],
      "steps": [{"read0": {"key": [1, 0], "gate": 0, "shift": [0, 0, 1]}}]})";
    w.model = w.dir / "model";
    REQUIRE(atlas_captured({"init", "--preset", "tiny-decoder", "--out", w.model.string()}).code == 0);
    return w;
  }();
  // Removed when the test process ends.
  static const struct FixtureFolderRemover {
    fs::path dir;
    ~FixtureFolderRemover() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } remover{f.dir};
  return f;
}

// One invocation per verb that prints its real result on stdout. `fresh` is a path that does
// not exist yet, for the verbs that also write a folder.
std::map<std::string, std::vector<std::string>> stdout_cases(const fs::path& fresh) {
  const WriteFixtures& f = write_fixtures();
  const std::string text = "abcdabcd";
  return {
      {"presets", {"presets"}},
      {"init", {"init", "--preset", "tiny-decoder", "--out", fresh.string()}},
      {"info", {"info", "preset:tiny-decoder"}},
      {"run", {"run", "preset:tiny-decoder", "--text", text}},
      {"generate", {"generate", f.model.string(), "--text", "ab", "--tokens", "2", "--greedy"}},
      {"bench", {"bench", "preset:tiny-decoder", "--length", "8", "--repeats", "1", "--json"}},
      {"devices", {"devices"}},
      {"pattern", {"pattern", "--preset", "tiny-local1d", "--length", "10", "--stats"}},
      {"performer-error", {"performer-error", "--length", "16", "--d", "8", "--features", "8"}},
      {"demos", {"demos"}},
      {"train", {"train", "--preset", "tiny-decoder", "--d-model", "16", "--d-ff", "32", "--batch", "2",
                 "--length", "4", "--task", "copy", "--eval", "0", "--steps", "1", "--json"}},
      {"scores", {"scores", "preset:tiny-encoder", "--text", "ab"}},
      {"corpus", {"corpus", "demo:induction", "--file", f.corpus_file.string(), "--out", fresh.string(),
                  "--top", "4"}},
      {"corpus-merge", {"corpus-merge", fresh.string(), f.corpus_run.string()}},
      {"corpus-query", {"corpus-query", f.corpus_run.string(), "--heads"}},
      {"heads", {"heads", "demo:induction", "--text", text, "--json"}},
      {"ablate", {"ablate", "preset:tiny-decoder", "--text", text, "--sweep", "layers", "--json"}},
      {"dla", {"dla", "preset:tiny-decoder", "--text", text, "--csv"}},
      {"patch", {"patch", "preset:tiny-decoder", "--clean", text, "--corrupted", "abcdabce", "--site", "head", "--metric", "kl"}},
      {"qk-decompose", {"qk-decompose", "preset:tiny-decoder", "--text", text, "--layer", "1", "--head", "0", "--query", "5", "--key", "2", "--value"}},
      {"attribute", {"attribute", "preset:tiny-decoder", "--clean", text, "--corrupted", "abcdabce", "--site", "head", "--metric", "kl"}},
      {"compare", {"compare", "preset:tiny-decoder", "--text", text, "--text-b", "abcdabce", "--json"}},
      {"search", {"search", "demo:induction", "--text", text, "--query-token", "a", "--key-token", "b",
                  "--json"}},
      {"ntm", {"ntm", "--controls", f.ntm_controls.string()}},
      {"sagan", {"sagan"}},
      {"snail", {"snail", "--text", text}},
      {"gguf", {"gguf", f.gguf.string(), "--metadata", "--tensors"}},
      {"export",
       {"export", "preset:tiny-decoder", "--text", "abc", "--panel", "ablation", "--drop-heads", "0:1",
        "--list-plots"}},
  };
}

std::string stdout_failure_line(const std::string& verb) {
  return "atlas " + verb + ": cannot write to standard output: no space left on the device\n";
}

}  // namespace

TEST_CASE("atlas --help lists the verb table: each listed verb answers its --help", "[cli][writes][stdout]") {
  const std::vector<std::string> verbs = listed_verbs();
  REQUIRE(verbs.size() >= 20);
  CHECK(std::set<std::string>(verbs.begin(), verbs.end()).size() == verbs.size());
  for (const std::string& verb : verbs) {
    INFO(verb);
    const Output help = atlas_captured({verb, "--help"});
    CHECK(help.code == 0);
    CHECK_THAT(help.out, Contains("usage: atlas " + verb));
  }
  // A name that is not a verb is refused, so the list above is of verbs and nothing else.
  const Output unknown = atlas_captured({"no-such-verb"});
  CHECK(unknown.code == 2);
  CHECK_THAT(unknown.err, Contains("unknown verb"));
}

TEST_CASE("Every verb's --help to /dev/full is exit 1 with one line on stderr", "[cli][writes][stdout]") {
  REQUIRE(fs::exists("/dev/full"));
  const Output top = run_atlas_to("/dev/full", {"--help"});
  CHECK(top.code == 1);
  CHECK(top.err == "atlas: cannot write to standard output: no space left on the device\n");
  for (const std::string& verb : listed_verbs()) {
    INFO(verb);
    const Output o = run_atlas_to("/dev/full", {verb, "--help"});
    CHECK(o.code == 1);
    CHECK(o.err == stdout_failure_line(verb));
  }
}

TEST_CASE("Every verb's real output to /dev/full is exit 1 with one line on stderr", "[cli][writes][stdout]") {
  REQUIRE(fs::exists("/dev/full"));
  const fs::path dir = write_failure::fresh_dir("every-write-stdout");
  int n = 0;
  const auto fresh = [&] { return dir / ("out" + std::to_string(n++)); };
  std::set<std::string> covered;
  for (const std::string& verb : listed_verbs()) {
    INFO(verb);
    const auto cases = stdout_cases(fresh());
    REQUIRE(cases.count(verb) == 1);  // a new verb needs its case here
    covered.insert(verb);
    // The oracle: the same command with stdout to a pipe succeeds and prints something.
    const Output ok = atlas_captured(stdout_cases(fresh()).at(verb));
    INFO(joined(stdout_cases(fs::path("OUT")).at(verb)) << "\nstderr: " << ok.err);
    if (verb == "devices" && ok.code == 0 && ok.out.empty()) {
      WARN("no Vulkan device here: atlas devices prints nothing (its --help is tested)");
      continue;
    }
    if (verb == "devices" && ok.code != 0) {
      WARN("atlas devices fails in this build: " << ok.err);
      continue;
    }
    REQUIRE(ok.code == 0);
    REQUIRE_FALSE(ok.out.empty());

    const Output full = run_atlas_to("/dev/full", stdout_cases(fresh()).at(verb));
    CHECK(full.code == 1);
    // The one line is added to what the command says on stderr anyway (here: nothing but
    // what the oracle run said), never replaced or repeated.
    CHECK(full.err == ok.err + stdout_failure_line(verb));
  }
  CHECK(covered.size() == stdout_cases(fresh()).size() - (covered.count("export") ? 0 : 1));
  fs::remove_all(dir);
}

TEST_CASE("Standard output to a file under ulimit -f: exit 1 naming the limit, not death by SIGXFSZ",
          "[cli][writes][stdout]") {
  const fs::path dir = write_failure::fresh_dir("every-write-stdout-limit");
  const fs::path file = dir / "presets.txt";
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"presets"},
        std::vector<std::string>{"heads", "demo:induction", "--text", "abcdabcdabcdabcd", "--json"}}) {
    INFO(joined(args));
    const Output all = atlas_captured(args);  // the oracle: more than the limit lets through
    REQUIRE(all.code == 0);
    REQUIRE(all.out.size() > 1024);
    const Output o = run_atlas_to(file.string(), args, 1024);
    CHECK(o.code == 1);
    CHECK(o.err == "atlas " + args[0] +
                       ": cannot write to standard output: the file is too large for the "
                       "file-size limit (ulimit -f)\n");
    CHECK(fs::file_size(file) == 1024);  // what fit; the exit code says it is not all
  }
  fs::remove_all(dir);
}

TEST_CASE("A closed standard output is reported, and printed text lands in no file", "[cli][writes][stdout]") {
  const fs::path dir = write_failure::fresh_dir("every-write-closed");
  Child c;
  c.stdout_mode = Child::Stdout::Closed;
  c.args = {"presets"};
  Output o = run_child(c);
  CHECK(o.code == 1);
  CHECK(o.err == "atlas presets: cannot write to standard output: standard output is closed\n");

  // The dump's files are the first the process opens: with fd 1 free, one of them would take
  // it and receive the printed predictions.
  const fs::path dump = dir / "dump";
  c.args = {"run", "preset:tiny-decoder", "--text", "abcdabcd", "--dump", dump.string()};
  o = run_child(c);
  CHECK(o.code == 1);
  CHECK(o.err == "atlas run: cannot write to standard output: standard output is closed\n");
  const Output reference = atlas_captured({"run", "preset:tiny-decoder", "--text", "abcdabcd", "--dump",
                                           (dir / "reference").string()});
  REQUIRE(reference.code == 0);
  CHECK(write_failure::snapshot(dump) == write_failure::snapshot(dir / "reference"));
  fs::remove_all(dir);
}

namespace {

// A command that writes a file (or a folder of files) at `target`, made inside `dir`.
struct FileWriter {
  std::string name;
  std::vector<std::string> args;
  fs::path target;
};

std::vector<FileWriter> file_writers(const fs::path& dir) {
  const WriteFixtures& f = write_fixtures();
  const std::string text = "abcdabcdabcdabcd";
  const auto at = [&](const std::string& name) { return dir / name; };
  std::vector<FileWriter> w = {
      {"init --out", {"init", "--preset", "tiny-decoder", "--out", at("model").string()}, at("model")},
      {"run --dump", {"run", "preset:tiny-decoder", "--text", text, "--dump", at("dump").string()}, at("dump")},
      {"generate --dump",
       {"generate", f.model.string(), "--text", "ab", "--tokens", "2", "--greedy", "--dump", at("gen").string()},
       at("gen")},
      {"scores --dump", {"scores", "preset:tiny-encoder", "--text", "abcd", "--dump", at("scores").string()},
       at("scores")},
      {"snail --dump", {"snail", "--text", text, "--dump", at("snail").string()}, at("snail")},
      {"sagan --dump", {"sagan", "--dump", at("sagan").string()}, at("sagan")},
      {"ntm --dump",
       {"ntm", "--controls", f.ntm_controls.string(), "--dump",
        at("ntm").string()},
       at("ntm")},
      {"pattern --out",
       {"pattern", "--preset", "tiny-local1d", "--length", "64", "--out", at("tile.npy").string()},
       at("tile.npy")},
      {"gguf --dump-tensor",
       {"gguf", f.gguf.string(), "--dump-tensor", "token_embd.weight", "--out", at("t.npy").string()},
       at("t.npy")},
      {"heads --csv", {"heads", "demo:induction", "--text", text, "--csv", at("h.csv").string()}, at("h.csv")},
      {"heads --npy", {"heads", "demo:induction", "--text", text, "--npy", at("hnpy").string()}, at("hnpy")},
      {"patch --out", {"patch", "preset:tiny-decoder", "--clean", text, "--corrupted", "abcdabcdabcdabce", "--site", "resid", "--metric", "kl", "--out", at("p").string()}, at("p")},
      {"patch --site path --out", {"patch", "preset:tiny-decoder", "--clean", text, "--corrupted", "abcdabcdabcdabce", "--site", "path", "--receivers", "1.0", "--receiver-input", "q", "--metric", "kl", "--out", at("pp").string()}, at("pp")},
      {"attribute --csv", {"attribute", "preset:tiny-decoder", "--clean", text, "--corrupted", "abcdabcdabcdabce", "--site", "resid", "--metric", "kl", "--csv", at("atp.csv").string()}, at("atp.csv")},
      {"attribute --out-npy", {"attribute", "preset:tiny-decoder", "--clean", text, "--corrupted", "abcdabcdabcdabce", "--site", "resid", "--metric", "kl", "--out-npy", at("atp.npy").string()}, at("atp.npy")},
      {"ablate --out",
       {"ablate", "preset:tiny-decoder", "--text", text, "--sweep", "heads", "--out", at("a.csv").string()},
       at("a.csv")},
      {"dla --out", {"dla", "preset:tiny-decoder", "--text", text, "--out", at("dla").string()}, at("dla")},
      {"qk-decompose --out-npy", {"qk-decompose", "preset:tiny-decoder", "--text", text, "--layer", "1", "--head", "0", "--query", "5", "--key", "2", "--out-npy", at("qk.npy").string()}, at("qk.npy")},
      {"qk-decompose --csv", {"qk-decompose", "preset:tiny-decoder", "--text", text, "--layer", "1", "--head", "0", "--query", "5", "--key", "2", "--csv", at("qk.csv").string()}, at("qk.csv")},
      {"compare --csv",
       {"compare", "preset:tiny-decoder", "--text", text, "--text-b", "abcdabcdabcdabce", "--csv",
        at("c.csv").string()},
       at("c.csv")},
      {"search --csv",
       {"search", "demo:induction", "--text", text, "--query-token", "a", "--key-token", "b", "--csv",
        at("s.csv").string()},
       at("s.csv")},
      {"train --out",
       {"train", "--preset", "tiny-decoder", "--d-model", "16", "--d-ff", "32", "--batch", "2", "--length", "4",
        "--task", "copy", "--eval", "0", "--steps", "1", "--json", "--out", at("ckpt").string()},
       at("ckpt")},
      {"corpus --out",
       {"corpus", "demo:induction", "--file", f.corpus_file.string(), "--out", at("corpus").string(), "--top",
        "4"},
       at("corpus")},
      {"corpus-merge",
       {"corpus-merge", at("merged").string(), f.corpus_run.string()},
       at("merged")},
      {"export --out (svg)",
       {"export", "preset:tiny-decoder", "--text", text, "--out", at("f.svg").string()},
       at("f.svg")},
      // PNG: encoded in memory first, so libpng adds no "Write Error" line of its own.
      {"export --out (png)",
       {"export", "preset:tiny-decoder", "--text", text, "--out", at("f.png").string()},
       at("f.png")},
      {"export --out (pdf)",
       {"export", "preset:tiny-decoder", "--text", text, "--out", at("f.pdf").string()},
       at("f.pdf")},
  };
  return w;
}

}  // namespace

TEST_CASE("Every file writer of atlas under ulimit -f fails by name, exit 1, no temporary left",
          "[cli][writes][ulimit]") {
  const fs::path root = write_failure::fresh_dir("every-write-ulimit");
  const fs::path ok_dir = root / "ok", limited_dir = root / "limited";
  fs::create_directories(ok_dir);
  fs::create_directories(limited_dir);
  const long long kLimit = 100;  // bytes: below the first file of every writer here
  for (const FileWriter& w : file_writers(ok_dir)) {
    INFO(w.name);
    // The oracle: without the limit the command writes more than the limit allows.
    const Output ok = atlas_captured(w.args);
    if (w.name.rfind("export", 0) == 0 && atlas_test::no_ui(ok)) {
      WARN("atlas was built without the Qt UI: export not tested");
      continue;
    }
    INFO(ok.err);
    REQUIRE(ok.code == 0);
    uintmax_t largest = 0;
    if (fs::is_directory(w.target)) {
      for (const auto& e : fs::recursive_directory_iterator(w.target))
        if (e.is_regular_file()) largest = std::max(largest, e.file_size());
    } else {
      largest = fs::file_size(w.target);
    }
    REQUIRE(largest > uintmax_t(kLimit));
  }
  for (const FileWriter& w : file_writers(limited_dir)) {
    INFO(w.name);
    Child c;
    c.args = w.args;
    c.file_size_limit = kLimit;
    const Output o = run_child(c);
    if (w.name.rfind("export", 0) == 0 && atlas_test::no_ui(o)) continue;
    // LLVM's libomp (the sanitizer build's OpenMP) sizes a 1 KB shared-memory file when it starts
    // and aborts when the limit refuses it, before atlas writes anything: such a run says nothing
    // about atlas's writers. The release build (libgomp) checks every writer.
    if (o.err.find("OMP: Error #179") != std::string::npos) {
      WARN(w.name << ": LLVM libomp cannot start under a " << kLimit << "-byte file-size limit; not checked in this build");
      continue;
    }
    INFO("stderr: " << o.err);
    CHECK(o.code == 1);  // 153 would be death by SIGXFSZ
    CHECK_THAT(o.err, Contains(w.target.string()) && Contains("write failed") &&
                          Contains("file-size limit (ulimit -f)"));
    CHECK(std::count(o.err.begin(), o.err.end(), '\n') == 1);
    CHECK(write_failure::leftovers(limited_dir).empty());
  }
  fs::remove_all(root);
}

namespace {

const fs::path kGuiApp = fs::path(ATLAS_CLI).parent_path() / "attention-atlas";

// The app on the offscreen platform with private settings and runtime folders (inside `dir`),
// so Qt has nothing to say about the environment.
Child gui_child(const fs::path& dir, std::vector<std::string> args) {
  const fs::path runtime = dir / "runtime";
  fs::create_directories(runtime);
  fs::permissions(runtime, fs::perms::owner_all, fs::perm_options::replace);
  Child c;
  c.program = kGuiApp.string();
  c.args = std::move(args);
  c.env = {{"QT_QPA_PLATFORM", "offscreen"},
           {"XDG_CONFIG_HOME", (dir / "config").string()},
           {"XDG_RUNTIME_DIR", runtime.string()}};
  return c;
}

}  // namespace

TEST_CASE("The app's screenshot under ulimit -f fails by name and keeps the old file", "[cli][writes][gui]") {
  if (!fs::exists(kGuiApp)) {
    WARN("no attention-atlas in this build (ATLAS_GUI=OFF): skipped");
    return;
  }
  const fs::path dir = write_failure::fresh_dir("every-write-gui");
  const fs::path shots = dir / "shots", shot = shots / "shot.png";
  fs::create_directories(shots);
  const std::vector<std::string> args = {"--model", "preset:tiny-decoder", "--text", "abcd", "--screenshot",
                                         shot.string()};
  // The oracle: unlimited, the screenshot is written and is larger than the limit below.
  const Output ok = run_child(gui_child(dir, args));
  INFO(ok.err);
  REQUIRE(ok.code == 0);
  REQUIRE(fs::file_size(shot) > 4096);
  const std::string before = write_failure::read_bytes(shot);

  Child limited = gui_child(dir, args);
  limited.file_size_limit = 4096;
  const Output o = run_child(limited);
  INFO(o.err);
  CHECK(o.code == 1);  // 153 would be death by SIGXFSZ
  // One line added to what the app says anyway (the offscreen platform's notes), and not the
  // PNG encoder's own complaints.
  CHECK(o.err == ok.err + "attention-atlas: screenshot: cannot write '" + shot.string() +
                     "': write failed (the file is too large for the file-size limit (ulimit -f)); "
                     "the old file is kept\n");
  CHECK(write_failure::read_bytes(shot) == before);
  CHECK(write_failure::leftovers(shots).empty());
  fs::remove_all(dir);
}

TEST_CASE("The app's --help and --version to /dev/full are exit 1 with one line", "[cli][writes][gui]") {
  if (!fs::exists(kGuiApp)) {
    WARN("no attention-atlas in this build (ATLAS_GUI=OFF): skipped");
    return;
  }
  const fs::path dir = write_failure::fresh_dir("every-write-gui-help");
  for (const std::string flag : {"--help", "--version"}) {
    INFO(flag);
    Child ok = gui_child(dir, {flag});
    const Output shown = run_child(ok);
    CHECK(shown.code == 0);
    CHECK_FALSE(shown.out.empty());
    Child full = gui_child(dir, {flag});
    full.stdout_mode = Child::Stdout::ToFile;
    full.stdout_file = "/dev/full";
    const Output o = run_child(full);
    CHECK(o.code == 1);
    CHECK(o.err == "attention-atlas: cannot write to standard output: no space left on the device\n");
  }
  fs::remove_all(dir);
}
