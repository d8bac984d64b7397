// Score functions side by side on one head (score_compare.h).
#include "core/analysis/score_compare.h"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

#include "core/model/stack_kind_module.h"
#include "core/tensor/error.h"
#include "core/tensor/random.h"

namespace atlas {

namespace {

Mat slice_cols(const Tensor& t, int64_t first, int64_t count) {
  return t.mat().block(0, first, t.shape[0], count);
}

// `name` ("" when absent), what it is for the message.
const TracedArray& require_traced(const Trace& tr, const std::string& name, const std::string& attention,
                                  const char* what) {
  const TracedArray* a = tr.find(name);
  if (!a)
    throw AtlasError("the run traced no " + std::string(what) + " for " + attention +
                     " (trace them with score_comparison_options)");
  return *a;
}

}  // namespace

RunOptions score_comparison_options(const Model& model) {
  RunOptions o;
  o.trace = TraceOptions::none();
  o.trace.masks = true;
  o.trace.qk = true;
  const HostModelKind* host = host_model_kind(model.config());  // the seq2seq's decoder / encoder states
  o.trace.hidden = host && host->scored_alignment;
  return o;
}

ScoreComparison compare_score_functions(const Model& model, const Trace& tr,
                                        const std::string& attention, int64_t layer,
                                        int64_t head, float strength) {
  const ModelConfig& c = model.config();
  const HostModelKind* host = host_model_kind(c);  // core/model/stack_kind_module.h
  const bool recurrent = host && host->scored_alignment;
  // Its traced queries and keys are only the content side of a score with terms of its own
  // (Transformer-XL's relative terms): the shared score functions do not recompute it.
  if (const StackKindModule* kind = stack_kind_module(c); kind && kind->own_attention)
    throw AtlasError(std::string("the score-function comparison recomputes the shared attention's scores from q and k; ") +
                     kind->name + " layers run their own attention, whose score adds terms of its own: not supported");
  ScoreComparison out;
  Mat q, k;
  AttentionMask mask;
  std::string weight_prefix;  // where the model keeps this layer's score weights
  if (recurrent) {
    const ScoredAlignment a = host->scored_alignment(c);
    out.attention = a.attention;
    q = require_traced(tr, a.queries, out.attention, "decoder states").tensor.mat();
    k = require_traced(tr, a.keys, out.attention, "encoder states").tensor.mat();
    weight_prefix = a.weight_prefix;
  } else {
    // The attention arrays whose queries were traced (their maps need not be: the options trace
    // no probabilities, so the catalogue does not hold them).
    std::vector<std::string> candidates;
    for (const auto& arr : tr.arrays)
      if (const auto c = companion_of(arr.name); c && c->second == Companion::Queries)
        candidates.push_back(c->first);
    if (candidates.empty())
      throw AtlasError("this model traced no projected queries (its attention layers do not go "
                       "through the shared attention: sparse, LSH, Performer and XL are not supported)");
    if (!attention.empty()) {
      if (std::find(candidates.begin(), candidates.end(), attention) == candidates.end()) {
        std::string list;
        for (const auto& n : candidates) list += (list.empty() ? "" : ", ") + n;
        throw AtlasError(attention + " is not an attention array of this model; choose one of " + list);
      }
      out.attention = attention;
    } else {
      // A layer no name can hold (negative, or at the 64-bit limit where layer + 1 overflows) is
      // never looked up.
      if (layer >= 0 && layer < std::numeric_limits<int64_t>::max())
        for (const auto& n : candidates)
          if (n.find(".layer" + std::to_string(layer) + ".") != std::string::npos ||
              n.find(".step" + std::to_string(layer + 1) + ".") != std::string::npos) {
            out.attention = n;
            break;
          }
      if (out.attention.empty()) {
        // The numbers the search above accepts: "layer<L>." or "step<L+1>." in a name.
        int64_t layers = 0;
        for (const auto& n : candidates)
          for (const auto& [word, base] : {std::pair<std::string, int64_t>{".layer", 0}, {".step", -1}})
            if (size_t at = n.find(word); at != std::string::npos) {
              const size_t digits = at + word.size();
              const size_t end = n.find_first_not_of("0123456789", digits);
              if (end != digits && end != std::string::npos && n[end] == '.')
                layers = std::max<int64_t>(layers, std::stoll(n.substr(digits, end - digits)) + base + 1);
            }
        throw AtlasError("layer " + std::to_string(layer) + " is out of range: the attention layers are 0 to " +
                         std::to_string(layers - 1) + " (first: " + candidates.front() + ", last: " +
                         candidates.back() + ")");
      }
    }
    if (head < 0 || head >= c.n_heads)
      throw AtlasError("head " + std::to_string(head) + " is out of range: the model has " +
                       std::to_string(c.n_heads) + " heads");
    const int64_t dh = c.d_head();
    const AttentionCompanions traced = traced_companions(tr, out.attention);
    q = slice_cols(require_traced(tr, traced.q, out.attention, "queries").tensor, head * dh, dh);
    k = slice_cols(require_traced(tr, traced.k, out.attention, "keys").tensor, head * dh, dh);
    if (const TracedArray* m = tr.find(traced.mask)) {
      mask.allowed.resize(m->tensor.data.size());
      for (size_t i = 0; i < mask.allowed.size(); ++i) mask.allowed[i] = m->tensor.data[i] != 0.0f;
    }
    weight_prefix = out.attention;
    out.head = head;
  }
  out.lq = q.rows();
  out.lk = k.rows();
  out.dq = q.cols();
  out.dk = k.cols();
  const bool decoder_side = recurrent || out.attention.rfind("decoder", 0) == 0;
  out.row_tokens = decoder_side && !tr.target_tokens.empty() ? tr.target_tokens : tr.source_tokens;
  if (!(strength > 0.0f)) strength = c.score_function().strength;

  const uint64_t seed = c.seed ^ hash_name(out.attention) ^ uint64_t(out.head);
  const auto& params = model.params();
  auto param = [&](const char* suffix) -> const Tensor* {
    auto it = params.find(weight_prefix + ".score." + suffix);
    return it == params.end() ? nullptr : &it->second;
  };
  for (ScoreFunction f : all_score_functions()) {
    ScoreComparison::Entry e;
    e.function = f;
    e.models_own = c.score_function().function == f;
    ScoreWeights w;
    if (e.models_own && score_function_has_weights(f) && param(f == ScoreFunction::Additive ? "w1" : "w")) {
      if (recurrent) {  // one [rows, cols] matrix per tensor, no head axis
        if (f == ScoreFunction::Additive) {
          w.w1 = param("w1")->mat();
          w.w2 = param("w2")->mat();
          w.v = param("v")->mat();
        } else {
          w.w = param("w")->mat();
        }
      } else {
        w = head_score_weights(f, param("w"), param("w1"), param("w2"), param("v"), out.head, strength);
      }
      e.note = "the model's weights " + weight_prefix + ".score.*";
    } else if (score_function_has_weights(f)) {
      // location: only the first Lk rows of W_a are ever used, so that is all that is drawn.
      w = seeded_score_weights(f, q.cols(), k.cols(), c.score_function().d_attn, k.rows(), seed);
      e.note = "seeded weights (seed " + std::to_string(seed) + "; the model has none for it)";
    } else {
      e.note = "no weights";
    }
    w.strength = strength;
    if (f == ScoreFunction::Cosine) e.note = "strength beta " + std::to_string(strength);
    try {
      e.scores = score_matrix(f, q, k, w);
      e.probs = masked_softmax(e.scores, mask);
    } catch (const AtlasError& err) {
      e.applicable = false;
      e.note = err.what();
    }
    out.entries.push_back(std::move(e));
  }
  return out;
}

void add_score_comparison(Trace& trace, const ScoreComparison& cmp) {
  for (const auto& e : cmp.entries) {
    if (!e.applicable) continue;
    const std::string fn = score_function_name(e.function);
    trace.add("scores." + fn + ".probs",
              "probabilities of score function " + fn + " on " + cmp.attention + " head " +
                  std::to_string(cmp.head) + " [Lq, Lk]",
              Tensor::from_mat(e.probs));
    trace.add(companion_array_name("scores." + fn, Companion::Scores), "scores of " + fn + ", masked = -inf [Lq, Lk]",
              Tensor::from_mat(e.scores));
  }
}

}  // namespace atlas
