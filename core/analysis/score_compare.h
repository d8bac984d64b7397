#pragma once
// Every score function of seed 004 on the same queries and keys of one attention head, side by
// side (seed 004; used by `atlas scores`, available to any view). The queries and keys are the
// model's own after projection (a run traced with TraceOptions::qk), or for a recurrent seq2seq
// model its decoder states s_t and encoder states h_i (a run traced with hidden states).
#include <string>
#include <vector>

#include "core/model/model.h"
#include "core/variants/score_functions/score_functions.h"

namespace atlas {

struct ScoreComparison {
  std::string attention;  // traced attention array, e.g. "decoder.layer1.cross_attn"
  int64_t head = 0;
  int64_t lq = 0, lk = 0, dq = 0, dk = 0;
  std::vector<TokenInfo> row_tokens;  // queries
  struct Entry {
    ScoreFunction function;
    bool applicable = true;
    bool models_own = false;  // the model is configured with this function
    std::string note;         // where the weights came from, or why it does not apply
    Mat scores;               // [Lq, Lk], masked = -inf
    Mat probs;                // [Lq, Lk]
  };
  std::vector<Entry> entries;  // all_score_functions() order
};

// What a run must trace for compare_score_functions.
RunOptions score_comparison_options(const Model& model);

// attention: "" picks the first attention array of `layer` (a Universal Transformer's steps
// count as layers); head is checked against n_heads. strength <= 0 uses the model's
// score.strength. Parametrised functions use the model's weights when it is configured with
// the function, else seeded weights (seed = config seed ^ hash(attention) ^ head).
ScoreComparison compare_score_functions(const Model& model, const Trace& trace,
                                        const std::string& attention, int64_t layer,
                                        int64_t head, float strength);

// Appends scores.<fn>.probs and scores.<fn>.scores [Lq, Lk] for each applicable function.
void add_score_comparison(Trace& trace, const ScoreComparison& comparison);

}  // namespace atlas
