// The trace array names declared once for producers and readers: GTrXL gate names parse back to
// what wrote them and nothing else parses; NTM head names; the rotary frequencies' name; and a
// run of each model writes the declared names (the readers find them).
#include <catch2/catch.hpp>

#include "core/model/model.h"
#include "core/model/model_arrays.h"
#include "core/model/params.h"
#include "core/model/presets.h"
#include "core/variants/gtrxl/gate_arrays.h"
#include "core/variants/ntm/ntm_arrays.h"

using namespace atlas;

TEST_CASE("GTrXL gate array names round-trip and nothing else parses as one", "[names][gtrxl]") {
  const gate_arrays::GateArray a{"decoder", 12, 3, "attn", "highway"};
  CHECK(gate_arrays::name_of(a) == "decoder.seg12.layer3.attn.gate.highway");
  const auto back = gate_arrays::parse(gate_arrays::name_of(a));
  REQUIRE(back);
  CHECK(back->stack == "decoder");
  CHECK(back->segment == 12);
  CHECK(back->layer == 3);
  CHECK(back->sublayer == "attn");
  CHECK(back->gate == "highway");
  const auto unsegmented = gate_arrays::parse("encoder.layer0.ffn.gate.z");
  REQUIRE(unsegmented);
  CHECK(unsegmented->segment == -1);
  for (const char* other : {"decoder.seg1.layer0.self_attn", "decoder.seg1.layer0.attn.gate", "decoder.segx.layer0.attn.gate.r",
                            "decoder.seg1.layer.attn.gate.r", "decoder.seg1.layer0.attn.gates.r", "logits", "",
                            "decoder.seg1.layer0.attn.gate.R", "a.b.c.d.e.f.g", "decoder.seg1.layer99999999999.attn.gate.r"})
    CHECK_FALSE(gate_arrays::parse(other));
}

TEST_CASE("NTM head array names", "[names][ntm]") {
  CHECK(ntm_arrays::head_array("write0", "erase") == "ntm.write0.erase");
  CHECK(ntm_arrays::head_of_weights("ntm.read1.weights") == "read1");
  CHECK(ntm_arrays::head_of_weights("ntm.read1.key").empty());
  CHECK(ntm_arrays::head_of_weights("ntm..weights").empty());
  CHECK(ntm_arrays::head_of_weights(ntm_arrays::kMemory).empty());
  CHECK(ntm_arrays::step_array(4, "read0", "content") == "ntm.step4.read0.content");
}

TEST_CASE("runs write the declared model-level and variant names", "[names]") {
  CHECK(model_arrays::frequencies_of(model_arrays::kPositional) ==
        model_arrays::kPositionalFrequencies);
  {
    const ModelConfig c = preset_config("tiny-rope");
    const RunResult r = Model(c, init_params(c, 1)).run("abcd", "", RunOptions{});
    CHECK(r.trace.find(model_arrays::kLogits));
    CHECK(r.trace.find(model_arrays::kPositional));
    CHECK(r.trace.find(model_arrays::kPositionalFrequencies));
  }
  {
    const ModelConfig c = preset_config("tiny-gtrxl");
    const RunResult r = Model(c, init_params(c, 1)).run("abcdefgh", "", RunOptions{});
    int gates = 0;
    for (const TracedArray& a : r.trace.arrays) gates += gate_arrays::parse(a.name) ? 1 : 0;
    CHECK(gates > 0);
  }
}
