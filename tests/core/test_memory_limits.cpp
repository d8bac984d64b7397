// The memory guard counts everything (core/model/memory_limits.h, memory_budget.h,
// model_header.h): the limits of the process's own cgroup and its ancestors (v1 and v2), read
// from a fake /proc + /sys tree; RLIMIT_AS; and every loader refusing, before it reads a byte of
// weights, a model whose weights alone exceed the budget, with the figure a hand count gives.
#include <catch2/catch.hpp>

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/formats/input_file.h"
#include "core/formats/model_header.h"
#include "core/formats/model_io.h"
#include "core/formats/safetensors.h"
#include "core/model/memory_budget.h"
#include "core/model/memory_limits.h"
#include "core/model/params.h"
#include "core/model/presets.h"
#include "core/tensor/error.h"
#include "core/train/train_loop.h"
#include "tests/core/hf_test_util.h"

using namespace atlas;
using Catch::Contains;
namespace fs = std::filesystem;

namespace {

constexpr uint64_t kGiB = uint64_t(1) << 30, kMiB = uint64_t(1) << 20;

// ATLAS_MEMORY_BUDGET for one scope.
struct ScopedBudget {
  explicit ScopedBudget(const char* value) { ::setenv("ATLAS_MEMORY_BUDGET", value, 1); }
  ~ScopedBudget() { ::unsetenv("ATLAS_MEMORY_BUDGET"); }
};

// A fake /proc/self, /proc/meminfo and /sys/fs/cgroup under a scratch folder.
struct FakeSystem {
  fs::path root = hf_test::fresh_dir("memory-limits");
  SystemFiles files() const {
    SystemFiles f;
    f.proc_self = (root / "proc/self").string();
    f.meminfo = (root / "proc/meminfo").string();
    f.cgroup_root = (root / "sys/fs/cgroup").string();
    f.address_space_limit = false;
    return f;
  }
  void write(const std::string& relative, const std::string& text) const {
    fs::create_directories((root / relative).parent_path());
    hf_test::write_text(root / relative, text);
  }
  ~FakeSystem() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
};

// A safetensors file whose header lists `tensors` (name, shape) as F32 and whose data region
// is a hole: any size costs nothing on disk, and the header is intact.
void write_sparse_safetensors(const fs::path& path,
                              const std::vector<std::pair<std::string, std::vector<int64_t>>>& tensors,
                              const nlohmann::json& metadata = nlohmann::json::object()) {
  nlohmann::json header = nlohmann::json::object();
  uint64_t offset = 0;
  for (const auto& [name, shape] : tensors) {
    uint64_t n = 4;
    for (int64_t d : shape) n *= uint64_t(d);
    header[name] = {{"dtype", "F32"}, {"shape", shape}, {"data_offsets", {offset, offset + n}}};
    offset += n;
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::string h = header.dump();
  while (h.size() % 8) h += ' ';
  {
    std::ofstream out(path, std::ios::binary);
    const uint64_t len = h.size();
    out.write(reinterpret_cast<const char*>(&len), 8);
    out << h;
  }
  fs::resize_file(path, 8 + h.size() + offset);
}

// What the test process has read with read(2)/pread(2) so far (/proc/self/io "rchar").
uint64_t bytes_read_so_far() {
  std::ifstream in("/proc/self/io");
  std::string key;
  uint64_t value = 0;
  while (in >> key >> value)
    if (key == "rchar:") return value;
  return 0;
}

std::string load_refusal(const std::function<void()>& load) {
  try {
    load();
  } catch (const AtlasError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("memory limits: the process's own cgroup v2 and its ancestors; the smallest room wins",
          "[memory-limits]") {
  FakeSystem sys;
  sys.write("proc/meminfo", "MemTotal:       16777216 kB\nMemFree: 1 kB\nMemAvailable:    8388608 kB\n");
  sys.write("proc/self/cgroup", "0::/user.slice/app.scope\n");
  // The parent allows 3 GiB and uses 1 GiB: 2 GiB of room, less than MemAvailable's 8 GiB.
  sys.write("sys/fs/cgroup/user.slice/memory.max", "3221225472\n");
  sys.write("sys/fs/cgroup/user.slice/memory.current", "1073741824\n");
  sys.write("sys/fs/cgroup/user.slice/app.scope/memory.max", "max\n");
  sys.write("sys/fs/cgroup/user.slice/app.scope/memory.current", "536870912\n");
  MemoryRoom room = memory_room(sys.files());
  CHECK(room.bytes == 2 * kGiB);
  CHECK_THAT(room.limit, Contains("cgroup /user.slice ") && Contains("v2 memory.max 3.0 GB") &&
                             Contains("1.0 GB in use"));

  // The process's own cgroup, tighter still: 1.5 GiB with 1 GiB in use.
  sys.write("sys/fs/cgroup/user.slice/app.scope/memory.max", "1610612736\n");
  sys.write("sys/fs/cgroup/user.slice/app.scope/memory.current", "1073741824\n");
  room = memory_room(sys.files());
  CHECK(room.bytes == 512 * kMiB);
  CHECK_THAT(room.limit, Contains("cgroup /user.slice/app.scope "));

  // The machine, tighter than both.
  sys.write("proc/meminfo", "MemAvailable:     262144 kB\n");
  room = memory_room(sys.files());
  CHECK(room.bytes == 256 * kMiB);
  CHECK_THAT(room.limit, Contains("MemAvailable of " + sys.files().meminfo));

  // Only the root's limit (the root paths of the former reader) is still read, in a container
  // whose cgroup namespace shows it "0::/".
  sys.write("proc/meminfo", "MemAvailable:    8388608 kB\n");
  sys.write("proc/self/cgroup", "0::/\n");
  sys.write("sys/fs/cgroup/memory.max", "1073741824\n");
  room = memory_room(sys.files());
  CHECK(room.bytes == kGiB);
  CHECK_THAT(room.limit, Contains("cgroup / "));
}

TEST_CASE("memory limits: cgroup v1's memory controller, its ancestors and a container's root",
          "[memory-limits]") {
  FakeSystem sys;
  sys.write("proc/meminfo", "MemAvailable:    8388608 kB\n");
  sys.write("proc/self/cgroup", "12:cpu,cpuacct:/docker/abc\n5:memory:/docker/abc\n1:name=systemd:/docker/abc\n");
  // Unlimited (2^63 rounded down to a page) at /docker: passed over.
  sys.write("sys/fs/cgroup/memory/docker/memory.limit_in_bytes", "9223372036854771712\n");
  sys.write("sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes", "1073741824\n");
  sys.write("sys/fs/cgroup/memory/docker/abc/memory.usage_in_bytes", "268435456\n");
  // The cpu controller's files are not memory limits.
  sys.write("sys/fs/cgroup/cpu,cpuacct/docker/abc/memory.limit_in_bytes", "1\n");
  MemoryRoom room = memory_room(sys.files());
  CHECK(room.bytes == 768 * kMiB);
  CHECK_THAT(room.limit, Contains("cgroup /docker/abc ") && Contains("v1 memory.limit_in_bytes 1.0 GB"));

  // A container that mounts its own cgroup as the controller's root: the process's path is not
  // there, the walk up to the root finds the limit.
  fs::remove_all(sys.root / "sys/fs/cgroup/memory/docker");
  sys.write("sys/fs/cgroup/memory/memory.limit_in_bytes", "536870912\n");
  room = memory_room(sys.files());
  CHECK(room.bytes == 512 * kMiB);
  CHECK_THAT(room.limit, Contains("cgroup / "));
}

TEST_CASE("memory limits: malformed or missing files are passed over, never trusted",
          "[memory-limits]") {
  FakeSystem sys;
  SystemFiles f = sys.files();
  CHECK(memory_room(f).bytes == 0);  // nothing known
  sys.write("proc/meminfo", "MemAvailable:    1048576 kB\n");
  sys.write("proc/self/cgroup", "garbage\n0::/../../etc\n0::/a\n");
  sys.write("sys/fs/cgroup/a/memory.max", "-5\n");
  sys.write("sys/fs/cgroup/memory.max", "99999999999999999999999\n");
  CHECK(memory_room(f).bytes == kGiB);  // MemAvailable alone
  // A FIFO where a limit file should be is refused by the input-file policy, not waited on.
  fs::remove(sys.root / "sys/fs/cgroup/a/memory.max");
  REQUIRE(::mkfifo((sys.root / "sys/fs/cgroup/a/memory.max").c_str(), 0600) == 0);
  CHECK(memory_room(f).bytes == kGiB);
}

TEST_CASE("memory limits: RLIMIT_AS less what is mapped bounds the room", "[memory-limits]") {
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ATLAS_LIMITS_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(ATLAS_LIMITS_ASAN)
  SUCCEED("the sanitizer maps terabytes of shadow memory: RLIMIT_AS cannot be lowered under it");
#else
  FakeSystem sys;
  sys.write("proc/meminfo", "MemAvailable:  104857600 kB\n");  // 100 GiB: not the limit here
  SystemFiles f = sys.files();
  f.proc_self = "/proc/self";  // the real status (VmSize); no cgroup limit in the fake meminfo
  f.address_space_limit = true;
  rlimit before{};
  REQUIRE(::getrlimit(RLIMIT_AS, &before) == 0);
  const std::string status = read_input_file("/proc/self/status", InputKind::SystemFile);
  const size_t at = status.find("VmSize:");
  REQUIRE(at != std::string::npos);
  const uint64_t mapped = std::stoull(status.substr(at + 7)) * 1024;
  rlimit lowered = before;
  lowered.rlim_cur = mapped + 256 * kMiB;
  if (before.rlim_max != RLIM_INFINITY && before.rlim_max < lowered.rlim_cur) lowered.rlim_cur = before.rlim_max;
  REQUIRE(::setrlimit(RLIMIT_AS, &lowered) == 0);
  const MemoryRoom room = memory_room(f);
  ::setrlimit(RLIMIT_AS, &before);
  // What is mapped moves a little between the two reads of VmSize.
  CHECK(room.bytes <= 256 * kMiB + 16 * kMiB);
  CHECK(room.bytes >= 256 * kMiB - 64 * kMiB);
  CHECK_THAT(room.limit, Contains("address-space limit RLIMIT_AS") && Contains("prlimit --as"));
#endif
}

TEST_CASE("weights guard: every loader refuses weights over the budget before reading them",
          "[memory-limits]") {
  const fs::path dir = hf_test::fresh_dir("weights-guard");
  // 256 Mi float32 values in one tensor: 1.0 GB of weights, a hole on disk. Each model below is
  // otherwise small and would be refused, if it were loaded, for its unexpected tensor after
  // converting the whole gigabyte; the budget's refusal comes first and names the figure.
  const std::vector<std::pair<std::string, std::vector<int64_t>>> big = {{"big", {262144, 1024}}};
  ScopedBudget budget("64M");
  const char* kNeeds = "the model's weights need about 1.0 GB";

  SECTION("our own model folder and single file") {
    const ModelConfig c = preset_config("tiny-encoder");
    fs::create_directories(dir / "ours");
    hf_test::write_text(dir / "ours" / "config.json", config_to_json(c));
    write_sparse_safetensors(dir / "ours" / "model.safetensors", big);
    const std::string m = load_refusal([&] { load_model((dir / "ours").string()); });
    CHECK_THAT(m, Contains((dir / "ours" / "model.safetensors").string()) && Contains(kNeeds) &&
                      Contains("64.0 MB is available (ATLAS_MEMORY_BUDGET=64M), of which 90% (57.6 MB) may be used") &&
                      Contains("nothing was loaded") && Contains("held as float32"));
    write_sparse_safetensors(dir / "single.safetensors", big, {{"config", config_to_json(c)}});
    CHECK_THAT(load_refusal([&] { load_model((dir / "single.safetensors").string()); }),
               Contains("single.safetensors: " + std::string(kNeeds)));
  }
  SECTION("Hugging Face GPT-2, BERT and ViT folders") {
    const fs::path gpt2 = hf_test::tiny_gpt2_dir("weights-guard-gpt2");
    write_sparse_safetensors(gpt2 / "model.safetensors", big);
    CHECK_THAT(load_refusal([&] { load_model(gpt2.string()); }),
               Contains(gpt2.string() + ": " + kNeeds) && Contains("every tensor as float32"));
    fs::remove_all(gpt2);

    fs::create_directories(dir / "bert");
    hf_test::write_text(dir / "bert" / "config.json",
                        R"({"model_type": "bert", "vocab_size": 8, "hidden_size": 8,
                            "num_hidden_layers": 1, "num_attention_heads": 2,
                            "intermediate_size": 16, "max_position_embeddings": 16,
                            "type_vocab_size": 2})");
    hf_test::write_bert_vocab(dir / "bert", {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c"});
    write_sparse_safetensors(dir / "bert" / "model.safetensors", big);
    CHECK_THAT(load_refusal([&] { load_model((dir / "bert").string()); }), Contains(kNeeds));

    fs::create_directories(dir / "vit");
    hf_test::write_text(dir / "vit" / "config.json",
                        R"({"model_type": "vit", "hidden_size": 8, "num_hidden_layers": 1,
                            "num_attention_heads": 2, "intermediate_size": 16, "image_size": 8,
                            "patch_size": 4, "num_channels": 3,
                            "id2label": {"0": "cat", "1": "dog"}})");
    write_sparse_safetensors(dir / "vit" / "model.safetensors", big);
    CHECK_THAT(load_refusal([&] { load_model((dir / "vit").string()); }), Contains(kNeeds));
  }
  SECTION("presets, demos and training, sized from their configs") {
    ScopedBudget tiny("1K");
    const ModelConfig c = preset_config("tiny-encoder");
    double bytes = 0;  // the oracle: every initialised parameter, 4 bytes each
    for (const auto& [name, t] : init_params(c, 1)) bytes += 4.0 * double(t.data.size());
    CHECK_THAT(load_refusal([&] { load_model("preset:tiny-encoder"); }),
               Contains("preset:tiny-encoder: the model's weights need about " +
                        format_bytes(uint64_t(bytes))) &&
                   Contains("A smaller preset fits"));
    CHECK_THAT(load_refusal([&] { load_model("demo:induction"); }), Contains("demo:induction"));
    train::TrainOptions o;
    o.steps = 1;
    CHECK_THAT(load_refusal([&] { train::Trainer t(c, o); }),
               Contains("training") && Contains("the model's weights need about") &&
                   Contains("Adam's two moments"));
  }
  fs::remove_all(dir);
}

TEST_CASE("model headers: sized from the headers without reading the weights", "[memory-limits]") {
  const fs::path dir = hf_test::fresh_dir("model-header");
  const ModelConfig c = preset_config("tiny-encoder");
  fs::create_directories(dir / "ours");
  hf_test::write_text(dir / "ours" / "config.json", config_to_json(c));
  // Four tensors, one of 1 GiB: all of it a hole, never to be read.
  write_sparse_safetensors(dir / "ours" / "model.safetensors",
                           {{"a", {3, 5}}, {"b", {7}}, {"big", {262144, 1024}}, {"c", {2, 2, 2}}});
  const uint64_t read_before = bytes_read_so_far();
  const ModelHeader h = read_model_header((dir / "ours").string());
  const uint64_t read_during = bytes_read_so_far() - read_before;
  CHECK(read_during < 64 * 1024);  // the config and the header, not the gigabyte
  CHECK(h.config.d_model == c.d_model);
  REQUIRE(h.held.tensors.size() == 4);
  CHECK(h.held.bytes() == Approx(4.0 * (15 + 7 + 262144.0 * 1024 + 8)));
  CHECK(h.held.summary().by_type.size() == 1);
  CHECK(h.held.summary().by_type[0].type == "F32");
  CHECK(h.held.detail() == "1.0 GB of float32 matrices, 28 bytes of float32 vectors");
  // A preset: the parameters its config asks for.
  const ModelHeader p = read_model_header("preset:tiny-encoder");
  CHECK(p.held.bytes() == Approx(4.0 * double(parameter_count(c))));
  fs::remove_all(dir);
}
