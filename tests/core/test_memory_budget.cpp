// The memory guard (core/model/memory_budget.h) and the early input-length check
// (core/tokenizers/token_budget.h): oversized runs are refused before they allocate, with an
// estimate that matches what the trace really holds and advice that is true.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/formats/input_file.h"  // format_bytes
#include "core/model/memory_budget.h"
#include "core/model/model.h"
#include "core/model/params.h"
#include "core/model/presets.h"
#include "core/tensor/allocation_policy.h"
#include "core/tensor/error.h"
#include "core/tokenizers/token_budget.h"
#include "core/variants/sparse/sparse_attention.h"

using namespace atlas;
using Catch::Contains;

namespace {

// Sets ATLAS_MEMORY_BUDGET for one scope.
struct BudgetOverride {
  explicit BudgetOverride(const char* value) { ::setenv("ATLAS_MEMORY_BUDGET", value, 1); }
  ~BudgetOverride() { ::unsetenv("ATLAS_MEMORY_BUDGET"); }
};

Model preset_with_positions(const std::string& name, int64_t max_positions = 0) {
  ModelConfig c = preset_config(name);
  if (max_positions > 0) c.max_positions = max_positions;
  return Model(c, init_params(c, 1));
}

double traced_attention_bytes(const Trace& trace) {
  double bytes = 0;
  for (const TracedArray& a : trace.arrays) {
    const bool attention = a.name.find("attn") != std::string::npos;
    if (attention) bytes += 4.0 * double(a.tensor.data.size());
  }
  return bytes;
}

// Records the longest text the wrapped tokenizer was asked to encode.
class RecordingTokenizer : public Tokenizer {
 public:
  explicit RecordingTokenizer(const Tokenizer& inner) : inner_(inner) {}
  std::vector<TokenInfo> encode(const std::string& text) const override {
    longest = std::max(longest, text.size());
    return inner_.encode(text);
  }
  std::string label(int32_t id) const override { return inner_.label(id); }
  int64_t vocab_size() const override { return inner_.vocab_size(); }
  mutable size_t longest = 0;

 private:
  const Tokenizer& inner_;
};

}  // namespace

TEST_CASE("memory estimate: hand count for a decoder-only model", "[memory-budget]") {
  const ModelConfig c = preset_config("tiny-decoder");  // 2 layers, 4 heads, d 64, ff 256, V 256
  TraceOptions t;  // probabilities and masks
  const RunMemoryEstimate e = estimate_run_memory(c, 100, 0, t);
  // Per layer: 4 heads x 100 x 100 probabilities + one 100 x 100 mask, 4 bytes each.
  CHECK(e.attention_maps == Approx(2 * 4.0 * (4 * 100 * 100 + 100 * 100)));
  CHECK(e.working == Approx(2 * 4.0 * 4 * 100 * 100));
  // FFN intermediate + 6 d-wide buffers + logits [100, 256].
  CHECK(e.activations == Approx(4.0 * 100 * (256 + 6 * 64) + 4.0 * 100 * 256));
  t.scores = true;
  CHECK(estimate_run_memory(c, 100, 0, t).attention_maps ==
        Approx(2 * 4.0 * (8 * 100 * 100 + 100 * 100)));
  // Quadratic in length: twice the tokens, four times the maps.
  CHECK(estimate_run_memory(c, 200, 0, t).attention_maps ==
        Approx(4 * estimate_run_memory(c, 100, 0, t).attention_maps));
}

TEST_CASE("memory estimate: covers what the trace really holds", "[memory-budget]") {
  for (const char* name : {"tiny-decoder", "tiny-encoder", "tiny-encoder-decoder", "tiny-ut-act",
                           "tiny-xl", "tiny-sparse-strided"}) {
    INFO(name);
    const Model model = preset_with_positions(name);
    RunOptions options;
    options.trace.scores = true;
    const bool enc_dec = model.config().architecture == Architecture::EncoderDecoder;
    const RunResult r = model.run(std::string(96, 'a'), enc_dec ? "a target" : "", options);
    const double actual = traced_attention_bytes(r.trace);
    const RunMemoryEstimate e =
        estimate_run_memory(model.config(), int64_t(r.trace.source_tokens.size()),
                            int64_t(r.trace.target_tokens.size()), options.trace);
    CHECK(actual > 0);
    CHECK(e.attention_maps >= 0.9 * actual);  // not an underestimate
    CHECK(e.attention_maps <= 4.0 * actual);  // nor a wild overestimate
  }
}

TEST_CASE("memory guard: refuses an over-budget run with advice that holds", "[memory-budget]") {
  const Model model = preset_with_positions("tiny-decoder");
  const std::string text(600, 'x');
  {
    BudgetOverride budget("2M");
    try {
      model.run(text, "", RunOptions{});
      FAIL("the run was not refused");
    } catch (const AtlasError& e) {
      const std::string m = e.what();
      CHECK_THAT(m, Contains("this run needs about") && Contains("2.0 MB is available") &&
                        Contains("tokens fits") && Contains("ATLAS_MEMORY_BUDGET"));
      // The threshold it refused by, so that "needs 1.9 MB" beside "2.0 MB" reads right:
      // 90% of 2 MiB is 1887436 bytes.
      CHECK_THAT(m, Contains("(ATLAS_MEMORY_BUDGET=2M), of which 90% (" + format_bytes(1887436) + ") may be used"));
      // The advice: the suggested length runs, one more token does not.
      const auto at = m.find("at most ");
      REQUIRE(at != std::string::npos);
      const int64_t fits = std::stoll(m.substr(at + 8));
      REQUIRE(fits > 0);
      REQUIRE(fits < 600);
      CHECK_NOTHROW(model.run(std::string(size_t(fits), 'x'), "", RunOptions{}));
      CHECK_THROWS_WITH(model.run(std::string(size_t(fits + 1), 'x'), "", RunOptions{}),
                        Contains("this run needs about"));
    }
  }
  CHECK_NOTHROW(model.run(text, "", RunOptions{}));  // the machine itself has room
  BudgetOverride bad("lots");
  CHECK_THROWS_WITH(model.run("x", "", RunOptions{}), Contains("ATLAS_MEMORY_BUDGET=\"lots\""));
}

TEST_CASE("memory guard: a 64k-position full-attention run is refused up front", "[memory-budget]") {
  // 65536 tokens, 2 layers x 4 heads of 65536^2 floats = 137 GB of maps: no machine here has it.
  // Stored maps are refused with the setting that makes the run fit; by default (Auto) such
  // maps are computed on request (attention_on_demand.h) and only queries and keys are counted.
  const Model model = preset_with_positions("tiny-decoder", 65536);
  RunOptions stored;
  stored.trace.maps = MapStorage::Stored;
  CHECK_THROWS_WITH(model.run(std::string(65536, 'a'), "", stored),
                    Contains("this run needs about") && Contains("GB") && Contains("--maps on-demand"));
  const RunMemoryEstimate e = estimate_run_memory(model.config(), 65536, 0, stored.trace);
  CHECK(e.attention_maps == Approx(2 * 4.0 * (4.0 * 65536 * 65536 + 65536.0 * 65536)));
  const RunMemoryEstimate on = estimate_run_memory(model.config(), 65536, 0, TraceOptions{});
  CHECK(on.attention_maps == Approx(2 * 2 * 4.0 * 65536 * 64));
}

TEST_CASE("token budget: a long text is refused before it is tokenized whole", "[memory-budget]") {
  const Model model = preset_with_positions("tiny-decoder");  // bytes tokenizer, max_positions 1024
  const RecordingTokenizer recording(model.tokenizer());
  std::string text;
  while (text.size() < (4u << 20)) text += "the quick brown fox jumps over the lazy dog ";
  CHECK_THROWS_WITH(check_token_budget(recording, text, 1024, "the input text"),
                    Contains("the input text has more than 1024 tokens"));
  CHECK(recording.longest <= 65536);  // only one chunk was ever encoded
  // Through Model::run too.
  CHECK_THROWS_WITH(model.run(text, "", RunOptions{}), Contains("more than 1024 tokens"));

  // Exactly at the limit (bytes: one token per byte) passes: the chunk cuts lose no token and
  // add none. Past the limit by more than the special-token slack (4 per chunk) it is refused;
  // within the slack, the exact check after tokenization decides (Model::run).
  const int64_t limit = 100000;
  const std::string at_limit = text.substr(0, size_t(limit));
  CHECK_NOTHROW(check_token_budget(recording, at_limit, limit, "t"));
  CHECK_THROWS_WITH(check_token_budget(recording, text.substr(0, size_t(limit) + 9), limit, "t"),
                    Contains("more than 100000 tokens"));
  CHECK_NOTHROW(check_token_budget(recording, text.substr(0, size_t(limit) + 8), limit, "t"));
  // Multi-byte characters split across a chunk: no whitespace at all, 3-byte characters.
  std::string cjk;
  while (cjk.size() < 200000) cjk += "\xE6\xBC\xA2";
  CHECK_NOTHROW(check_token_budget(recording, cjk, int64_t(cjk.size()), "t"));
}

TEST_CASE("memory estimate: sparse layers over the dense-copy limit trace CSR only, and it is counted",
          "[memory-budget][sparse]") {
  for (const char* name : {"tiny-sparse-strided", "tiny-sparse-fixed"}) {
    INFO(name);
    const int64_t L = 2100;  // 4 heads x 2100^2 cells is over kDenseTraceCells
    const Model model = preset_with_positions(name, L);
    REQUIRE_FALSE(sparse_dense_copy_traced(model.config().n_heads, L));
    const RunResult r = model.run(std::string(size_t(L), 'a'), "", RunOptions{});
    REQUIRE(int64_t(r.trace.source_tokens.size()) == L);
    const std::string layer0 = "decoder.layer0.self_attn";
    CHECK(r.trace.find(layer0 + ".values") != nullptr);
    CHECK(r.trace.find(layer0) == nullptr);          // no dense copy
    CHECK(r.trace.find(layer0 + ".mask") == nullptr);
    const double actual = traced_attention_bytes(r.trace);
    const RunMemoryEstimate e = estimate_run_memory(model.config(), L, 0, RunOptions{}.trace);
    CHECK(e.attention_maps >= 0.9 * actual);
    CHECK(e.attention_maps <= 4.0 * actual);
  }
}

TEST_CASE("memory estimate: heads sharing one pattern trace no membership flags, and it is counted",
          "[memory-budget][sparse]") {
  for (const char* name : {"tiny-local1d", "tiny-local1d-unmasked"}) {
    INFO(name);
    const int64_t L = 2100;
    const Model model = preset_with_positions(name, L);
    const RunResult r = model.run(std::string(size_t(L), 'a'), "", RunOptions{});
    int with_values = 0;
    for (const AttentionMap& m : r.trace.attention_maps) {
      with_values += r.trace.find(m.array + ".values") != nullptr;
      CHECK(r.trace.find(m.array + ".allowed") == nullptr);  // one pattern: every nonzero is every head's
    }
    CHECK(with_values == 2);  // both layers traced their CSR
    const double actual = traced_attention_bytes(r.trace);
    const RunMemoryEstimate e = estimate_run_memory(model.config(), L, 0, RunOptions{}.trace);
    CHECK(e.attention_maps >= 0.9 * actual);
    CHECK(e.attention_maps <= 4.0 * actual);
  }
  // Per-head factors keep them.
  const Model fixed = preset_with_positions("tiny-sparse-fixed", 300);
  const RunResult r = fixed.run(std::string(300, 'a'), "", RunOptions{});
  CHECK(r.trace.find("decoder.layer0.self_attn.allowed") != nullptr);
}

TEST_CASE("memory estimate: a sparse layer past the traceable nonzeros counts no CSR arrays, as the run traces none",
          "[memory-budget][sparse]") {
  // local1d_unmasked with one block over the whole input: every query sees every key, so each of
  // the 4 heads has L^2 = 16,810,000 nonzeros, past the 2^24 that float32 indices hold exactly.
  ModelConfig c = preset_config("tiny-local1d-unmasked");
  const int64_t L = 4100;
  REQUIRE(L * L >= kMaxTracedIndex);
  c.sparse()->block_length = L;
  c.n_layers = 1;
  const Model model(c, init_params(c, 1));
  const RunResult r = model.run(std::string(size_t(L), 'a'), "", RunOptions{});
  for (const TracedArray& a : r.trace.arrays) {
    INFO(a.name);
    CHECK(a.name.find(".values") == std::string::npos);
    CHECK(a.name.find(".indices") == std::string::npos);
  }
  const RunMemoryEstimate e = estimate_run_memory(c, L, 0, RunOptions{}.trace);
  // The CSR arrays would be 4 bytes x (1 + 2 x 4 heads) x 16.8 M = 605 MB; counted before, 0 now.
  CHECK(e.attention_maps < 50e6);
  // And the views can say why: 4100^2 nonzeros in one head.
  CHECK(untraced_sparse_maps_reason(c, L).find("16810000 nonzeros in one head") != std::string::npos);
  CHECK(untraced_sparse_maps_reason(c, 4000).empty());  // 16,000,000: traced
}

TEST_CASE("memory guard: freed blocks the allocator keeps count as available", "[memory-budget]") {
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ATLAS_TEST_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(ATLAS_TEST_ASAN)
  SUCCEED("the sanitizer's allocator does not report its free lists");
#else
  // 1024 blocks of 64 KB (below malloc's mmap threshold: from the heap); every other one freed
  // leaves 32 MB of holes the allocator cannot give back to the kernel.
  std::vector<void*> blocks;
  for (int i = 0; i < 1024; ++i) {
    blocks.push_back(std::malloc(64 << 10));
    REQUIRE(blocks.back());
    std::memset(blocks.back(), 1, 64 << 10);
  }
  const uint64_t before = freed_memory_held();  // after the blocks took any free memory there was
  for (size_t i = 0; i < blocks.size(); i += 2) std::free(blocks[i]);
  const uint64_t holes = freed_memory_held();
  CHECK(holes >= before + (30u << 20));
  for (size_t i = 1; i < blocks.size(); i += 2) std::free(blocks[i]);
#endif
}
