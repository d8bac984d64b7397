// The attention-map catalogue: every attention array a run traces is described (stack, layer,
// segment, step, kind, which tokens its rows and columns are), for every preset; Transformer-XL
// segments and Universal Transformer steps against values worked out from the config by hand;
// dumps carry the catalogue and dumps written before it (manifest version 1) still read.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/analysis/stored_rows.h"
#include "core/formats/dump.h"
#include "core/model/attention_map.h"
#include "core/tensor/error.h"
#include "tests/core/hf_test_util.h"
#include "tests/core/preset_test_util.h"

using namespace atlas;
namespace fs = std::filesystem;
using hf_test::fresh_dir;

namespace {

// Labels repeat ("ab" many times): a view keyed by label instead of position would merge them.
const std::string kText = "abababab abab abababab ab";

void check_same_description(const AttentionMap& a, const AttentionMap& b) {
  INFO("array " << a.array);
  CHECK(a.array == b.array);
  CHECK(a.stack == b.stack);
  CHECK(a.sublayer == b.sublayer);
  CHECK(a.layer == b.layer);
  CHECK(a.segment == b.segment);
  CHECK(a.step == b.step);
  CHECK(a.queries.side == b.queries.side);
  CHECK(a.queries.begin == b.queries.begin);
  CHECK(a.queries.count == b.queries.count);
  CHECK(a.keys.side == b.keys.side);
  CHECK(a.keys.begin == b.keys.begin);
  CHECK(a.keys.count == b.keys.count);
  CHECK(a.memory_keys == b.memory_keys);
  CHECK(a.heads == b.heads);
}

// The labels a span names, read straight from the trace's token lists.
std::vector<std::string> labels_by_hand(const Trace& t, const TokenSpan& s) {
  std::vector<std::string> out;
  for (int64_t i = s.begin; i < s.begin + s.count; ++i) {
    if (s.side == TokenSide::Positions) {
      out.push_back(std::to_string(i));
      continue;
    }
    const auto& list = s.side == TokenSide::Source ? t.source_tokens : t.target_tokens;
    REQUIRE(i >= 0);
    REQUIRE(i < int64_t(list.size()));
    out.push_back(list[size_t(i)].label);
  }
  return out;
}


}  // namespace

TEST_CASE("every preset describes every attention array it traces", "[attention_map][presets]") {
  for (const PresetInfo& info : list_presets()) {
    INFO("preset " << info.name);
    const ModelConfig c = preset_test::small_preset_config(info.name);
    const Model model(c, init_params(c, 3));
    const RunResult r = preset_test::run_preset_input(model, kText, RunOptions{});
    const Trace& t = r.trace;
    if (c.ntm()) {  // addressing weights over memory rows, no attention over tokens
      CHECK(t.attention_maps.empty());
      continue;
    }
    REQUIRE_FALSE(t.attention_maps.empty());
    for (const AttentionMap& m : t.attention_maps) {
      INFO("map " << m.array);
      CHECK((m.dense || m.csr));
      CHECK(m.heads > 0);
      CHECK(query_labels(t, m) == labels_by_hand(t, m.queries));
      CHECK(key_labels(t, m) == labels_by_hand(t, m.keys));
      if (m.dense) {
        const Tensor& a = t.find(m.array)->tensor;
        REQUIRE(a.shape == Shape{m.heads, m.queries.count, m.keys.count});
        // Each row a distribution over the keys; a row with no allowed key (a sparse head's
        // factor that reaches nothing yet) is all zeros. Otherwise rows are not all 1.
        for (int64_t h = 0; h < m.heads; ++h)
          for (int64_t i = 0; i < m.queries.count; ++i) {
            double sum = 0;
            for (int64_t j = 0; j < m.keys.count; ++j)
              sum += a.data[size_t((h * m.queries.count + i) * m.keys.count + j)];
            if (m.normalized) CHECK((std::abs(sum - 1.0) < 1e-4 || sum == 0.0));
            if (!m.normalized) CHECK(sum < 1.0 + 1e-4);
          }
      }
      if (!m.companions.mask.empty())
        CHECK(t.find(m.companions.mask)->tensor.shape == Shape{m.queries.count, m.keys.count});
      // Every dense kind traces its allowed keys (default trace options), Performer's included.
      // (SNAIL and SAGAN blocks and the recurrent seq2seq alignment have no mask to trace.)
      if (m.dense && m.kind != AttentionMapKind::Cross && !c.sagan() && !c.snail() &&
          !c.rnn_seq2seq())
        CHECK_FALSE(m.companions.mask.empty());
    }
    // Every array the dump's naming scheme calls attention is in the catalogue, described as
    // the names say (the seq2seq alignment, SNAIL blocks and XL segments included).
    for (const AttentionMap& derived : derive_attention_maps(t)) {
      const AttentionMap* m = t.attention_map(derived.array);
      REQUIRE(m != nullptr);
      AttentionMap expect = derived;
      expect.heads = m->heads;  // CSR-only maps: derived from the values' rows as well
      check_same_description(*m, expect);
    }
  }
}

TEST_CASE("Transformer-XL maps: each segment's queries over memory + segment, by hand",
          "[attention_map][xl]") {
  const ModelConfig c = preset_config("tiny-xl");
  const int64_t S = c.xl()->segment_length, M = c.xl()->mem_len;
  const Model model(c, init_params(c, 1));
  std::string text;
  while (int64_t(text.size()) < 3 * S + 2) text += "ab";
  const RunResult r = model.run(text, "", RunOptions{});
  const int64_t L = int64_t(r.trace.source_tokens.size());
  const int64_t segments = (L + S - 1) / S;
  int64_t seen = 0;
  for (int64_t s = 0; s < segments; ++s)
    for (int64_t l = 0; l < c.n_layers; ++l) {
      const std::string name =
          "decoder.seg" + std::to_string(s) + ".layer" + std::to_string(l) + ".self_attn";
      const AttentionMap* m = r.trace.attention_map(name);
      INFO(name);
      REQUIRE(m != nullptr);
      ++seen;
      // Memory is the last mem_len rows of everything before the segment.
      const int64_t memory = std::min(M, s * S), rows = std::min(S, L - s * S);
      CHECK(m->kind == AttentionMapKind::Memory);
      CHECK(m->segment == s);
      CHECK(m->layer == l);
      CHECK(m->memory_keys == memory);
      CHECK(m->queries.begin == s * S);
      CHECK(m->queries.count == rows);
      CHECK(m->keys.begin == s * S - memory);
      CHECK(m->keys.count == memory + rows);
      // The run's own record of where each key came from agrees.
      const TracedArray* ks = r.trace.find("xl.seg" + std::to_string(s) + ".key_segment");
      REQUIRE(ks != nullptr);
      int64_t from_memory = 0;
      for (float v : ks->tensor.data) from_memory += v < float(s);
      CHECK(from_memory == memory);
      if (memory > 0) CHECK(attention_map_title(*m).find("memory") != std::string::npos);
      // The mask, by hand: query i (absolute position s S + i) sees every key up to itself.
      REQUIRE(m->companions.mask == name + ".mask");
      const Tensor& mask = r.trace.find(m->companions.mask)->tensor;
      const Tensor& probs = r.trace.find(name)->tensor;
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < memory + rows; ++j) {
          const bool visible = m->keys.begin + j <= s * S + i;
          CHECK((mask.data[size_t(i * (memory + rows) + j)] == 1.0f) == visible);
          if (!visible) CHECK(probs.data[size_t(i * (memory + rows) + j)] == 0.0f);
        }
    }
  CHECK(int64_t(r.trace.attention_maps.size()) == seen);
}

TEST_CASE("Universal Transformer maps: one per step the run took", "[attention_map][act]") {
  const ModelConfig c = preset_config("tiny-ut-act");
  const Model model(c, init_params(c, 2));
  const RunResult r = model.run("011010|010011", "", RunOptions{});
  const TracedArray* steps = r.trace.find("act.steps");
  REQUIRE(steps != nullptr);
  float most = 0;
  for (float v : steps->tensor.data) most = std::max(most, v);
  REQUIRE(int64_t(r.trace.attention_maps.size()) == int64_t(most));
  for (size_t n = 0; n < r.trace.attention_maps.size(); ++n) {
    const AttentionMap& m = r.trace.attention_maps[n];
    CHECK(m.step == int64_t(n) + 1);
    CHECK(m.array == attention_array_name(m));
    CHECK(m.queries.count == int64_t(r.trace.source_tokens.size()));
  }
}

TEST_CASE("dumps carry the catalogue; version 1 dumps read with derived descriptions",
          "[attention_map][dump]") {
  for (const char* preset : {"tiny-xl", "tiny-encoder-decoder", "tiny-sparse-strided"}) {
    INFO(preset);
    const ModelConfig c = preset_config(preset);
    const Model model(c, init_params(c, 4));
    const std::string target = c.architecture == Architecture::EncoderDecoder ? "abba" : "";
    const RunResult r = model.run("abababababababababab", target, RunOptions{});
    const fs::path dir = fresh_dir(std::string("maps-") + preset);
    write_dump(dir.string(), model, r);

    const TraceDump v2 = read_trace_dump(dir.string());
    CHECK(v2.version == 2);
    REQUIRE(v2.trace.attention_maps.size() == r.trace.attention_maps.size());
    for (size_t i = 0; i < r.trace.attention_maps.size(); ++i) {
      check_same_description(v2.trace.attention_maps[i], r.trace.attention_maps[i]);
      CHECK(v2.trace.attention_maps[i].kind == r.trace.attention_maps[i].kind);
      CHECK(v2.trace.attention_maps[i].companions == r.trace.attention_maps[i].companions);
    }
    REQUIRE(v2.trace.names() == r.trace.names());
    for (size_t i = 0; i < r.trace.arrays.size(); ++i)
      CHECK(v2.trace.arrays[i].tensor.data == r.trace.arrays[i].tensor.data);

    // The same folder as a dump from before the catalogue.
    const fs::path manifest = dir / "manifest.json";
    nlohmann::json j = nlohmann::json::parse(std::ifstream(manifest));
    j["version"] = 1;
    j.erase("attention_maps");
    std::ofstream(manifest) << j.dump();
    const TraceDump v1 = read_trace_dump(dir.string());
    CHECK(v1.version == 1);
    REQUIRE(v1.trace.attention_maps.size() == r.trace.attention_maps.size());
    for (size_t i = 0; i < r.trace.attention_maps.size(); ++i) {
      check_same_description(v1.trace.attention_maps[i], r.trace.attention_maps[i]);
      CHECK(v1.trace.attention_maps[i].companions == r.trace.attention_maps[i].companions);
    }
    fs::remove_all(dir);
  }
}

TEST_CASE("a map's companions name the arrays traced beside it, as docs/dump-format.md names them",
          "[attention_map][companions]") {
  // The oracle: the suffixes the dump format documents, with the field and Companion of each.
  struct Documented {
    const char* suffix;
    Companion companion;
    std::string AttentionCompanions::*field;
  };
  const std::vector<Documented> documented = {
      {".indptr", Companion::Indptr, &AttentionCompanions::indptr},
      {".indices", Companion::Indices, &AttentionCompanions::indices},
      {".values", Companion::Values, &AttentionCompanions::values},
      {".allowed", Companion::Allowed, &AttentionCompanions::allowed},
      {".mask", Companion::Mask, &AttentionCompanions::mask},
      {".scores", Companion::Scores, &AttentionCompanions::scores},
      {".q", Companion::Queries, &AttentionCompanions::q},
      {".k", Companion::Keys, &AttentionCompanions::k},
      {".key_valid", Companion::KeyValid, &AttentionCompanions::key_valid},
      {".value_norms", Companion::ValueNorms, &AttentionCompanions::value_norms},
  };
  for (const Documented& d : documented) {
    INFO(d.suffix);
    const std::string name = std::string("decoder.seg1.layer0.self_attn") + d.suffix;
    CHECK(companion_array_name("decoder.seg1.layer0.self_attn", d.companion) == name);
    const auto back = companion_of(name);
    REQUIRE(back);
    CHECK(back->first == "decoder.seg1.layer0.self_attn");
    CHECK(back->second == d.companion);
  }
  CHECK_FALSE(companion_of("decoder.layer0.self_attn"));
  CHECK_FALSE(companion_of(".q"));  // a suffix alone names no map's companion

  std::vector<bool> seen(documented.size(), false);  // the suffixes some map had: every field is exercised below
  auto check = [&](const Trace& t, const Trace* read_back) {
    REQUIRE_FALSE(t.attention_maps.empty());
    for (const AttentionMap& m : t.attention_maps) {
      for (size_t n = 0; n < documented.size(); ++n) {
        const Documented& d = documented[n];
        const std::string name = m.array + d.suffix;
        INFO(name);
        if (t.find(name)) {
          CHECK(m.companions.*d.field == name);
          seen[n] = true;
        } else {
          CHECK((m.companions.*d.field).empty());
        }
      }
      if (read_back) {  // a dump's catalogue finds the same companions (version 2 and 1 alike)
        const AttentionMap* r = read_back->attention_map(m.array);
        REQUIRE(r);
        CHECK(r->companions == m.companions);
      }
    }
  };
  RunOptions everything;
  everything.trace = TraceOptions::all();
  everything.trace.qk = true;
  everything.trace.value_norms = true;
  {  // dense maps: mask, scores, queries, keys, value norms; through a dump and back
    const ModelConfig c = preset_config("tiny-encoder");
    const Model model(c, init_params(c, 4));
    const RunResult r = model.run("abababab", "", everything);
    const fs::path dir = fresh_dir("maps-companions");
    write_dump(dir.string(), model, r);
    const TraceDump v2 = read_trace_dump(dir.string());
    check(r.trace, &v2.trace);
    const fs::path manifest = dir / "manifest.json";
    nlohmann::json j = nlohmann::json::parse(std::ifstream(manifest));
    j["version"] = 1;
    j.erase("attention_maps");
    std::ofstream(manifest) << j.dump();
    const TraceDump v1 = read_trace_dump(dir.string());
    check(r.trace, &v1.trace);
    fs::remove_all(dir);
  }
  {  // sparse heads with their own patterns: the CSR parts and `allowed`
    const ModelConfig c = preset_config("tiny-sparse-fixed");
    const Model model(c, init_params(c, 4));
    check(model.run("a longer input so that several blocks of sixteen appear here", "", RunOptions{}).trace, nullptr);
  }
  {  // computed on request over padded keys: queries, keys and key_valid
    const ModelConfig c = preset_config("tiny-encoder");
    const Model model(c, init_params(c, 4));
    RunOptions o;
    o.trace.maps = MapStorage::OnDemand;
    o.pad_to = 12;
    check(model.run("abababab", "", o).trace, nullptr);
  }
  CHECK(std::count(seen.begin(), seen.end(), true) == int64_t(documented.size()));
}

TEST_CASE("readers find a map's arrays through its companions, not by building names",
          "[attention_map][companions]") {
  const ModelConfig c = preset_config("tiny-sparse-fixed");
  const Model model(c, init_params(c, 4));
  RunOptions o;
  o.trace.attention = true;
  RunResult r = model.run("a longer input so that several blocks of sixteen appear here", "", o);
  const std::string array = "decoder.layer1.self_attn";
  AttentionMap* m = nullptr;
  for (AttentionMap& each : r.trace.attention_maps)
    if (each.array == array) m = &each;
  REQUIRE(m);
  REQUIRE(m->csr);
  // Read as CSR only (the dense copy gone), under names no naming scheme would build.
  m->dense = false;
  std::erase_if(r.trace.arrays, [&](const TracedArray& a) { return a.name == array; });
  int renamed = 0;
  for (std::string* field : {&m->companions.indptr, &m->companions.indices, &m->companions.values}) {
    const std::string to = "renamed" + std::to_string(renamed++);
    for (TracedArray& a : r.trace.arrays)
      if (a.name == *field) a.name = to;
    *field = to;
  }
  const StoredRows rows(r.trace, *m);
  // Each head's rows against the CSR walked by hand from the renamed arrays.
  const Tensor& indptr = r.trace.find("renamed0")->tensor;
  const Tensor& indices = r.trace.find("renamed1")->tensor;
  const Tensor& values = r.trace.find("renamed2")->tensor;
  const int64_t nnz = indices.numel();
  REQUIRE(nnz > 0);
  int64_t compared = 0;
  for (int64_t h = 0; h < m->heads; ++h)
    for (int64_t i = 0; i < m->queries.count; ++i) {
      std::vector<float> want(size_t(m->keys.count), 0.0f), got(size_t(m->keys.count), 0.0f);
      for (auto n = int64_t(indptr.data[size_t(i)]); n < int64_t(indptr.data[size_t(i) + 1]); ++n)
        want[size_t(indices.data[size_t(n)])] = values.data[size_t(h * nnz + n)];
      const RowWeights w = rows.row(h, i);
      for (int64_t t = 0; t < w.count; ++t) got[size_t(w.key(t))] = w.weights[t];
      compared += got == want;
    }
  CHECK(compared == m->heads * m->queries.count);
}

TEST_CASE("a dump manifest that lies is refused by name", "[attention_map][dump]") {
  const ModelConfig c = preset_config("tiny-encoder");
  const Model model(c, init_params(c, 4));
  const RunResult r = model.run("abab", "", RunOptions{});
  const fs::path dir = fresh_dir("maps-lies");
  write_dump(dir.string(), model, r);
  const fs::path manifest = dir / "manifest.json";
  const nlohmann::json good = nlohmann::json::parse(std::ifstream(manifest));
  auto refused = [&](nlohmann::json j, const std::string& says) {
    std::ofstream(manifest) << j.dump();
    CHECK_THROWS_WITH(read_trace_dump(dir.string()),
                      Catch::Contains("manifest.json") && Catch::Contains(says));
  };
  nlohmann::json j = good;
  j["attention_maps"][0]["kind"] = "diagonal";
  refused(j, "attention map kind must be one of");
  j = good;
  j["arrays"][0]["file"] = "../outside.npy";
  refused(j, "plain name");
  j = good;
  j["attention_maps"][0]["queries"]["count"] = 99;  // disagrees with the stored [heads, 4, 4]
  refused(j, "described with 99 queries");
  j = good;
  j["tokens"][0]["id"] = int64_t(1) << 40;  // would not fit a token id: never truncated silently
  refused(j, "token id");
  j = good;
  j["version"] = 7;
  refused(j, "version 7");
  // Integers that index a model's parts or a token list are range-checked before a view sizes
  // a grid or a label list by them (a count of 2^62 once reached reserve(); begin + i overflowed).
  const std::string map0 = "map " + good["attention_maps"][0]["array"].get<std::string>() + ": ";
  j = good;
  j["attention_maps"][0]["queries"]["count"] = int64_t(1) << 62;
  refused(j, "token span count 4611686018427387904 is out of range: it must be from 0 to 1048576");
  j = good;
  j["attention_maps"][0]["keys"]["begin"] = std::numeric_limits<int64_t>::max();
  refused(j, "token span begin 9223372036854775807 is out of range");
  j = good;
  j["attention_maps"][0]["layer"] = int64_t(1) << 28;
  refused(j, map0 + "layer 268435456 is out of range: it must be from 0 to 1023");
  j = good;
  j["attention_maps"][0]["step"] = int64_t(1) << 62;
  refused(j, map0 + "step 4611686018427387904 is out of range: it must be from -1 to 1024");
  j = good;
  j["attention_maps"][0]["memory_keys"] = 5;  // more than the map's 4 keys
  refused(j, map0 + "memory_keys 5 is out of range: it must be from 0 to 4");
  j = good;
  j["attention_maps"][0]["kv_heads"] = -3;
  refused(j, map0 + "kv_heads -3 is out of range");
  fs::remove_all(dir);
}
