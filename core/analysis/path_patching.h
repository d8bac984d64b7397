#pragma once
// Path patching (Wang et al. 2022, "Interpretability in the Wild: a Circuit for Indirect Object
// Identification in GPT-2 small", §3.1 and Appendix B): the effect of a sender head's output on
// the receivers' query, key or value input only. With the target run T (noising: the clean input;
// denoising: the corrupted) and the source run S (the other input):
//   A, B: T and S recorded (every head's output before W^O);
//   C: T's input with the sender's output set to S's and every other head's output frozen to T's,
//      so the change reaches the receivers through the residual stream (and the MLPs, recomputed)
//      only, not through other heads; the receivers' q, k or v recorded;
//   D: T's input with the receivers' chosen input set to C's; nothing else edited.
// The metric of D, normalised as activation patching (patching.h): clean = 1, corrupted = 0.
// A sender at or after a receiver's layer has no path to it: its cell is the target's metric.
// Definitions and conventions: docs/patching.md.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/analysis/patching.h"
#include "core/model/model.h"

namespace atlas {

enum class ReceiverInput { Q, K, V };
const char* receiver_input_name(ReceiverInput r);  // "q", "k", "v"
ReceiverInput parse_receiver_input(const std::string& s, const std::string& flag);

struct HeadRef {
  int64_t layer = 0, head = 0;  // global layer (as patching counts them), head
  bool operator==(const HeadRef&) const = default;
};
// "L.H[,L.H...]" or "all" (-> empty: every head, one column of the grid each); throws AtlasError
// naming `flag` and the bad item.
std::vector<HeadRef> parse_receivers(const std::string& s, const std::string& flag);

struct PathPatchSpec {
  PatchSpec patch;                 // direction, metric, tokens, position (its site is ignored)
  std::vector<HeadRef> receivers;  // empty: every head as its own receiver (the grid's columns)
  ReceiverInput input = ReceiverInput::Q;
  // Run the cells whose senders have no path to any receiver too (their value is the target's
  // metric by construction; tests prove it with the runs).
  bool run_every_cell = false;
};

struct PathPatchResult {
  PathPatchSpec spec;
  // [layers, heads] (senders; all receivers patched together) or, for every head as a receiver,
  // [layers, heads, layers, heads] (sender layer, sender head, receiver layer, receiver head).
  std::vector<int64_t> shape;
  std::vector<double> raw, normalised;  // as PatchResult
  double clean = 0.0, corrupted = 0.0;
  int64_t position = 0;
  int64_t runs = 0;  // forwards run (cells without a path excluded unless run_every_cell)
};

// Throws AtlasError naming the problem: what check_patching refuses for a q/k/v site, a receiver
// outside the model's layers or heads (named).
void check_path_patching(const Model& model, const std::vector<TokenInfo>& clean,
                         const std::vector<TokenInfo>& corrupted, const PathPatchSpec& spec);

// One recording run of each input, then per sender one run C and one run D per receiver cell.
// `options` as activation_patching's. Throws Cancelled when the flag is set.
PathPatchResult path_patching(const Model& model, const std::vector<TokenInfo>& clean,
                              const std::vector<TokenInfo>& corrupted, const PathPatchSpec& spec,
                              const RunOptions& options,
                              const std::function<void(int64_t done, int64_t total)>& progress = {});

}  // namespace atlas
