#pragma once
// Reformer LSH attention (lsh_attention.cpp) on the training tape (core/train/train_model_impl.h)
// as one dense softmax: keys are the unit shared-QK rows, a key counts once per round whose
// chunks let the query see it (log count added to its score), a query's own key has the
// engine's constant -1e5. The buckets are piecewise constant in q, so they carry no gradient and
// are read off the forward values.
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/config/config.h"
#include "core/model/array_name_parts.h"  // layer_index_of
#include "core/train/train_tape.h"
#include "core/variants/reformer/lsh_attention.h"
#include "core/variants/score_functions/train_score.h"  // head_unit_rows

namespace atlas::train {

template <class S>
int lsh_tape_attention(Tape<S>& t, const ModelConfig& c, int q, int v, const std::string& prefix,
                       AttentionSpec<S> spec) {
  const int H = static_cast<int>(c.n_heads);
  const int64_t L = t.value(q).rows(), dh = c.d_head();
  const int k = head_unit_rows(t, q, H, S(1e-6));
  const LshParams p = lsh_params(*c.lsh(), L, layer_index_of(prefix), spec.causal,
                                 spec.key_valid.empty() ? nullptr : &spec.key_valid);
  spec.head_allowed.assign(size_t(H * L * L), 0);
  spec.score_bias.assign(size_t(H * L * L), S(0));
  for (int h = 0; h < H; ++h) {
    const Mat kh = t.value(k).middleCols(h * dh, dh).template cast<float>();
    const std::vector<int32_t> counts = lsh_key_counts(kh, p, h);
    for (size_t n = 0; n < counts.size(); ++n) {
      spec.head_allowed[size_t(h) * counts.size() + n] = counts[n] > 0;
      if (counts[n] > 1) spec.score_bias[size_t(h) * counts.size() + n] = S(std::log(double(counts[n])));
    }
  }
  spec.causal = false;  // both folded into head_allowed (a padded query still sees itself)
  spec.key_valid.clear();
  spec.self_constant = true;
  spec.self_logit = S(-1e5);
  return t.attention(q, k, v, std::move(spec));
}

}  // namespace atlas::train
