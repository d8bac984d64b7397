// atlas snail: the SNAIL network (core/variants/snail/snail.h) with seeded weights on the bytes of a text;
// prints the attention blocks' shapes and the conv stack's receptive field, dumps the arrays.
#include <cmath>
#include <cstdio>

#include "app/cli/commands.h"
#include "core/formats/dump.h"
#include "core/tensor/error.h"
#include "core/variants/snail/snail.h"
#include "core/variants/snail/snail_arrays.h"

namespace atlas::cli {

namespace {

const char* kSnailUsage =
    "usage: atlas snail --text S [--seed N] [--tc-blocks B] [--paper-dilations] [--dump DIR]\n"
    "  SNAIL (Mishra et al. 2018): Attn, TC, Attn, TC, Attn with seeded weights on the bytes\n"
    "  of S (one step per byte, embedding 16, D 8, K 16, V 8). TC blocks use dilations\n"
    "  1, 2, 4, ... (ceil(log2 L) dense blocks); --paper-dilations uses 2, 4, 8, ...\n"
    "  --dump DIR   snail.attn<i> [1, L, L], snail.receptive_field [L, L], snail.output\n";

}  // namespace

int cmd_snail(const std::vector<std::string>& args) {
  if (wants_help(args, kSnailUsage)) return 0;
  Args a(args, {{"--text", "--seed", "--tc-blocks", "--dump"}, {"--paper-dilations"}});
  // A folder --dump may not write is refused before the (possibly long) run.
  if (auto dir = a.get("--dump")) check_dump_destination(*dir);
  if (!a.positionals().empty()) throw AtlasError("snail takes no positional arguments (see atlas snail --help)");
  const std::string text = a.require("--text");
  if (text.empty()) throw AtlasError("--text is empty: nothing to run");
  if (text.size() > 4096) throw AtlasError("--text has " + std::to_string(text.size()) + " bytes; SNAIL here takes at most 4096");
  SnailSpec s;
  s.seed = static_cast<uint64_t>(a.get_int("--seed", 0, 0, INT64_MAX));
  s.tc_blocks = a.get_int("--tc-blocks", 2, 0, 8);
  s.paper_dilations = a.has("--paper-dilations");
  const int64_t L = static_cast<int64_t>(text.size());
  const Mat x = snail_byte_embeddings(s, text);
  Trace trace;
  trace.source_tokens = snail_byte_tokens(text);
  snail_forward(s, x, &trace);
  std::printf("SNAIL: %lld steps, %lld TC blocks, dilations", static_cast<long long>(L), static_cast<long long>(s.tc_blocks));
  for (int64_t d : snail_dilations(L, s.paper_dilations)) std::printf(" %lld", static_cast<long long>(d));
  const Tensor& rf = trace.find(snail_arrays::kReceptiveField)->tensor;
  int64_t reach = 0;
  for (int64_t j = 0; j < L; ++j) reach += rf.data[size_t((L - 1) * L + j)] > 0;
  std::printf("\nthe last position reaches %lld of %lld inputs through the convolutions\n",
              static_cast<long long>(reach), static_cast<long long>(L));
  for (const auto& arr : trace.arrays)
    std::printf("  %-24s %s\n", arr.name.c_str(), shape_str(arr.tensor.shape).c_str());
  if (auto dir = a.get("--dump")) {
    write_trace_dump(*dir, "snail", trace);
    std::printf("dumped %zu arrays to %s\n", trace.arrays.size(), dir->c_str());
  }
  return 0;
}

}  // namespace atlas::cli
