// libFuzzer target for a dump's manifest.json (core/formats/dump.h parse_trace_dump): any input
// must either read or throw atlas::AtlasError. Every listed array loads as a [2, 3, 3] tensor
// (files named *.q.npy / *.k.npy as [3, 4], *.key_valid.npy as [3]), so the catalogue's checks
// against stored shapes run too, and maps computed on request are computed (a row, the
// overview). Any other exception, crash or sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/formats/dump.h"
#include "core/model/attention_on_demand.h"
#include "core/tensor/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    auto ends = [](const std::string& f, const std::string& tail) {
      return f.size() >= tail.size() && f.compare(f.size() - tail.size(), tail.size(), tail) == 0;
    };
    const atlas::TraceDump d = atlas::parse_trace_dump(text, "fuzz/manifest.json", [&](const std::string& file) {
      if (ends(file, ".q.npy") || ends(file, ".k.npy")) return atlas::Tensor({3, 4});
      if (ends(file, ".key_valid.npy")) return atlas::Tensor({3});
      return atlas::Tensor({2, 3, 3});
    });
    volatile size_t sink = d.trace.attention_maps.size();
    for (const atlas::AttentionMap& m : d.trace.attention_maps)
      sink = sink + atlas::query_labels(d.trace, m).size() + atlas::key_labels(d.trace, m).size();
    for (const atlas::AttentionMap& m : d.trace.attention_maps) {
      if (!m.on_demand) continue;
      try {
        const atlas::OnDemandMap od(d.trace, m);
        if (od.queries() > 0) sink = sink + od.rows(0, 0, 1).size();
        sink = sink + od.block_max(atlas::OnDemandMap::kMeanOfHeads, 2, 2).size();
      } catch (const atlas::AtlasError&) {
      }
    }
    (void)sink;
  } catch (const atlas::AtlasError&) {
  }
  return 0;
}
