// libFuzzer target for a dump's manifest.json (core/formats/dump.h parse_trace_dump): any input
// must either read or throw atlas::AtlasError. Every listed array loads as a [2, 3, 3] tensor,
// so the catalogue's checks against stored shapes run too. Any other exception, crash or
// sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/formats/dump.h"
#include "core/tensor/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const atlas::TraceDump d = atlas::parse_trace_dump(text, "fuzz/manifest.json", [](const std::string&) {
      return atlas::Tensor({2, 3, 3});
    });
    volatile size_t sink = d.trace.attention_maps.size();
    for (const atlas::AttentionMap& m : d.trace.attention_maps)
      sink = sink + atlas::query_labels(d.trace, m).size() + atlas::key_labels(d.trace, m).size();
    (void)sink;
  } catch (const atlas::AtlasError&) {
  }
  return 0;
}
