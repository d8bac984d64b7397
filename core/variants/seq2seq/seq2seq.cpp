// Recurrent encoder-decoder with attention and the Pointer Network (equations in seq2seq.h).
#include "core/variants/seq2seq/seq2seq.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/tensor/error.h"
#include "core/model/model_arrays.h"
#include "core/tensor/sigmoid.h"
#include "core/model/params.h"
#include "core/variants/score_functions/score_functions.h"  // the alignment scores

namespace atlas {

namespace {

Mat param_mat(const ParamStore& p, const std::string& name) { return required_param(p, name).mat(); }

RowVec param_row(const ParamStore& p, const std::string& name) {
  const Tensor& t = required_param(p, name);
  return Eigen::Map<const RowVec>(t.data.data(), t.numel());
}

RnnCellWeights cell_weights(const ParamStore& p, const std::string& prefix) {
  return {param_mat(p, prefix + ".w"), param_mat(p, prefix + ".u"), param_row(p, prefix + ".b")};
}

void add_cell(std::vector<ParamSpec>& specs, const ModelConfig& c, const std::string& prefix,
              int64_t in) {
  const int64_t G = rnn_gates(c.rnn_seq2seq()->cell), H = c.rnn_seq2seq()->hidden_size;
  specs.push_back({prefix + ".w", {G * H, in}});
  specs.push_back({prefix + ".u", {G * H, H}});
  specs.push_back({prefix + ".b", {G * H}, InitKind::Zeros});
}

bool is_pointer(const ModelConfig& c) { return c.rnn_seq2seq()->output == Seq2SeqOutput::Pointer; }

int64_t decoder_input_size(const ModelConfig& c) {
  const Seq2SeqConfig& s = std::get<Seq2SeqConfig>(c.stack);
  if (is_pointer(c)) return c.d_model;
  return c.d_model + (s.style == AttentionStyle::Bahdanau ? seq2seq_encoder_size(c) : s.hidden_size);
}

// Weights of config.score between decoder states [H] and encoder states [E].
ScoreWeights attention_weights(const ModelConfig& c, const ParamStore& p) {
  const ScoreConfig score = c.score_function();
  ScoreWeights w;
  w.strength = score.strength;
  switch (score.function) {
    case ScoreFunction::General:
    case ScoreFunction::Location: w.w = param_mat(p, "attention.score.w"); break;
    case ScoreFunction::Additive:
      w.w1 = param_mat(p, "attention.score.w1");
      w.w2 = param_mat(p, "attention.score.w2");
      w.v = param_row(p, "attention.score.v");
      break;
    default: break;
  }
  return w;
}

void trace_matrix(Trace& trace, const std::string& name, const std::string& meaning,
                  const Mat& m, Shape shape) {
  Tensor t(std::move(shape));
  std::copy(m.data(), m.data() + m.size(), t.data.begin());
  trace.add(name, meaning, std::move(t));
}

}  // namespace

int64_t seq2seq_encoder_size(const ModelConfig& c) {
  return c.rnn_seq2seq()->hidden_size * (c.rnn_seq2seq()->bidirectional ? 2 : 1);
}

std::vector<ParamSpec> seq2seq_param_specs(const ModelConfig& c) {
  const Seq2SeqConfig& s = std::get<Seq2SeqConfig>(c.stack);
  const int64_t H = s.hidden_size, E = seq2seq_encoder_size(c);
  const ScoreConfig score = c.score_function();
  const int64_t da = score.d_attn > 0 ? score.d_attn : H;
  std::vector<ParamSpec> specs;
  specs.push_back({"embed.tokens", {c.vocab_size, c.d_model}});
  add_cell(specs, c, "encoder.forward", c.d_model);
  if (s.bidirectional) add_cell(specs, c, "encoder.backward", c.d_model);
  specs.push_back({"decoder.start", {1, c.d_model}});
  specs.push_back({"decoder.init.w", {H, H}});
  specs.push_back({"decoder.init.b", {H}, InitKind::Zeros});
  add_cell(specs, c, "decoder.cell", decoder_input_size(c));
  switch (score.function) {
    case ScoreFunction::General: specs.push_back({"attention.score.w", {H, E}}); break;
    case ScoreFunction::Location: specs.push_back({"attention.score.w", {c.max_positions, H}}); break;
    case ScoreFunction::Additive:
      specs.push_back({"attention.score.w1", {da, H}});
      specs.push_back({"attention.score.w2", {da, E}});
      specs.push_back({"attention.score.v", {1, da}});
      break;
    default: break;
  }
  if (s.alignment == Alignment::LocalP) {
    specs.push_back({"attention.local.wp", {H, H}});
    specs.push_back({"attention.local.vp", {1, H}});
  }
  if (!is_pointer(c)) {
    if (s.style == AttentionStyle::Luong) {
      specs.push_back({"decoder.combine.w", {H, E + H}});
      specs.push_back({"output.weight", {c.vocab_size, H}});
    } else {
      specs.push_back({"output.weight", {c.vocab_size, H + E}});
    }
  }
  return specs;
}

std::vector<uint8_t> local_window(Alignment a, int64_t t, int64_t ls, int64_t window,
                                  float center_logit, float* center) {
  std::vector<uint8_t> allowed(size_t(ls), 1);
  if (a == Alignment::Global) return allowed;
  const float p = a == Alignment::LocalM ? float(std::min(t, ls - 1))
                                         : float(ls) * sigmoid(center_logit);
  if (center) *center = p;
  for (int64_t i = 0; i < ls; ++i) allowed[size_t(i)] = std::fabs(float(i) - p) <= float(window);
  return allowed;
}

RowVec align_step(RowVec& e, const std::vector<uint8_t>& allowed, Alignment a, float center,
                  int64_t window, Selection selection) {
  AttentionMask mask;
  mask.key_valid = allowed;
  Mat m = e;
  RowVec w = masked_softmax(m, mask);
  e = m;
  if (a == Alignment::LocalP) {
    const float sigma = float(window) / 2.0f;
    for (int64_t i = 0; i < w.cols(); ++i)
      w(i) *= std::exp(-(float(i) - center) * (float(i) - center) / (2.0f * sigma * sigma));
  }
  if (selection == Selection::Hard) {
    Eigen::Index best = 0;
    w.maxCoeff(&best);
    w.setZero();
    w(best) = 1.0f;
  }
  return w;
}

RunResult seq2seq_forward(const ModelConfig& c, const ParamStore& p,
                          const std::vector<TokenInfo>& source, const std::vector<TokenInfo>& target,
                          const RunOptions& options) {
  const Seq2SeqConfig& s = std::get<Seq2SeqConfig>(c.stack);
  const bool pointer = is_pointer(c);
  const int64_t Ls = int64_t(source.size()), H = s.hidden_size;
  if (source.empty()) throw AtlasError("source text is empty: nothing to run");
  if (Ls > c.max_positions)
    throw AtlasError("source text has " + std::to_string(Ls) + " tokens, more than the model's "
                     "max_positions " + std::to_string(c.max_positions));
  if (target.empty() && !pointer)
    throw AtlasError("target text is empty: the decoder is teacher-forced over the target "
                     "(give --target)");
  if (int64_t(target.size()) > c.max_positions)
    throw AtlasError("target text has " + std::to_string(target.size()) +
                     " tokens, more than the model's max_positions " + std::to_string(c.max_positions));
  for (const auto* seq : {&source, &target})
    for (const auto& tok : *seq)
      if (tok.id < 0 || tok.id >= c.vocab_size)
        throw AtlasError("token id " + std::to_string(tok.id) + " is outside the vocabulary of " +
                         std::to_string(c.vocab_size));

  // Pointer targets: each target token is the first source position holding it not used yet.
  std::vector<int64_t> pointed;
  if (pointer) {
    std::vector<uint8_t> used(size_t(Ls), 0);
    for (size_t t = 0; t < target.size(); ++t) {
      int64_t found = -1;
      for (int64_t i = 0; i < Ls && found < 0; ++i)
        if (!used[size_t(i)] && source[size_t(i)].id == target[t].id) found = i;
      for (int64_t i = 0; i < Ls && found < 0; ++i)  // repeated outputs may reuse a position
        if (source[size_t(i)].id == target[t].id) found = i;
      if (found < 0)
        throw AtlasError("target token \"" + target[t].label + "\" (position " + std::to_string(t) +
                         ") is not in the source; a Pointer Network outputs input positions only");
      used[size_t(found)] = 1;
      pointed.push_back(found);
    }
  }
  const bool greedy = pointer && target.empty();
  const int64_t Lt = greedy ? Ls : int64_t(target.size());

  // Scaled by sqrt(d) as the Transformer's embeddings (scale_embedding, default on), so the
  // seeded rows have unit-size entries and a random-weight model's alignments are not flat.
  const float scale = c.scale_embedding ? std::sqrt(float(c.d_model)) : 1.0f;
  const Mat table = param_mat(p, "embed.tokens") * scale;  // [V, d]
  Mat x(Ls, c.d_model);
  for (int64_t i = 0; i < Ls; ++i) x.row(i) = table.row(source[size_t(i)].id);

  // Encoder annotations h_i [Ls, E] and the decoder's initial state.
  RnnState fwd_last;
  const RnnCellWeights fw = cell_weights(p, "encoder.forward");
  Mat enc;
  RowVec h_bar;
  if (s.bidirectional) {
    const RnnCellWeights bw = cell_weights(p, "encoder.backward");
    enc = bidirectional_encode(s.cell, fw, bw, x);
    h_bar = enc.row(0).tail(H);  // backward state at the first position (Bahdanau appendix)
  } else {
    enc = rnn_run(s.cell, fw, x, false, &fwd_last);
    h_bar = fwd_last.h;
  }
  RnnState state = zero_state(H);
  state.h = (h_bar * param_mat(p, "decoder.init.w").transpose() + param_row(p, "decoder.init.b"))
                .array().tanh().matrix();

  const RnnCellWeights dw = cell_weights(p, "decoder.cell");
  const ScoreWeights sw = attention_weights(c, p);
  Mat wp, combine, out_w;
  RowVec vp;
  if (s.alignment == Alignment::LocalP) {
    wp = param_mat(p, "attention.local.wp");
    vp = param_row(p, "attention.local.vp");
  }
  if (!pointer) {
    out_w = param_mat(p, "output.weight");
    if (s.style == AttentionStyle::Luong) combine = param_mat(p, "decoder.combine.w");
  }

  Mat align(Lt, Ls), scores(Lt, Ls), dec_states(Lt, H), logits(pointer ? 0 : Lt, c.vocab_size);
  std::vector<float> centers;
  RowVec y_prev = param_row(p, "decoder.start") * scale, tilde = RowVec::Zero(H);
  std::vector<uint8_t> chosen(size_t(Ls), 0);
  std::vector<TokenInfo> out_tokens;

  auto attend = [&](const RowVec& query, int64_t t) -> RowVec {
    float center = 0.0f, logit = 0.0f;
    if (s.alignment == Alignment::LocalP)
      logit = (query * wp.transpose()).array().tanh().matrix().dot(vp);
    std::vector<uint8_t> allowed = local_window(s.alignment, t, Ls, s.window, logit, &center);
    if (greedy) {
      bool any = false;
      for (int64_t i = 0; i < Ls; ++i) any |= (allowed[size_t(i)] &= !chosen[size_t(i)]);
      // A local window can hold only positions already pointed to: widen it to the rest.
      if (!any)
        for (int64_t i = 0; i < Ls; ++i) allowed[size_t(i)] = !chosen[size_t(i)];
    }
    RowVec e = score_matrix(c.score_function().function, query, enc, sw);
    RowVec a = align_step(e, allowed, s.alignment, center, s.window, s.selection);
    scores.row(t) = e;
    align.row(t) = a;
    if (s.alignment != Alignment::Global) centers.push_back(center);
    return a;
  };

  for (int64_t t = 0; t < Lt; ++t) {
    if (options.cancel && options.cancel->load()) throw Cancelled();
    if (pointer) {
      state = rnn_step(s.cell, dw, y_prev, state);
      const RowVec a = attend(state.h, t);
      int64_t next = greedy ? -1 : pointed[size_t(t)];
      if (greedy) {
        Eigen::Index best = 0;
        a.maxCoeff(&best);
        next = best;
        chosen[size_t(next)] = 1;
        out_tokens.push_back(source[size_t(next)]);
        pointed.push_back(next);
      }
      y_prev = x.row(next);
    } else if (s.style == AttentionStyle::Bahdanau) {
      const RowVec a = attend(state.h, t);  // from s_{t-1}
      const RowVec ctx = a * enc;
      RowVec in(y_prev.cols() + ctx.cols());
      in << y_prev, ctx;
      state = rnn_step(s.cell, dw, in, state);
      RowVec sc(H + ctx.cols());
      sc << state.h, ctx;
      logits.row(t) = sc * out_w.transpose();
      y_prev = table.row(target[size_t(t)].id);
    } else {
      RowVec in(y_prev.cols() + H);
      in << y_prev, tilde;
      state = rnn_step(s.cell, dw, in, state);
      const RowVec a = attend(state.h, t);  // from s_t
      const RowVec ctx = a * enc;
      RowVec cs(ctx.cols() + H);
      cs << ctx, state.h;
      tilde = (cs * combine.transpose()).array().tanh().matrix();
      logits.row(t) = tilde * out_w.transpose();
      y_prev = table.row(target[size_t(t)].id);
    }
    dec_states.row(t) = state.h;
    if (options.progress) options.progress(double(t + 1) / double(Lt), "decoder step " + std::to_string(t));
  }

  RunResult result;
  Trace& trace = result.trace;
  trace.source_tokens = source;
  trace.target_tokens = greedy ? out_tokens : target;
  const TraceOptions& topt = options.trace;
  const std::string kind = pointer ? "pointer" : "seq2seq";
  if (topt.attention) {
    trace_matrix(trace, pointer ? "pointer.probs" : "seq2seq.alignment",
                 pointer ? "pointer distribution p(c_t = i) over input positions [1, Lt, Ls]"
                         : "alignment alpha_ti of target step t over source position i [1, Lt, Ls]",
                 align, {1, Lt, Ls});
    // The same matrix under the cross-attention name, so the heatmap and figure export show it
    // with source tokens on x and target tokens on y (Bahdanau et al. Fig. 3).
    trace_matrix(trace, "decoder.layer0.cross_attn", kind + " alignment (same as " +
                 (pointer ? std::string("pointer.probs") : std::string("seq2seq.alignment")) +
                 ") [1, Lt, Ls]", align, {1, Lt, Ls});
    AttentionMap m;
    m.array = "decoder.layer0.cross_attn";
    m.stack = "decoder";
    m.sublayer = "cross_attn";
    m.kind = AttentionMapKind::Cross;
    m.queries = {TokenSide::Target, 0, Lt};
    m.keys = {TokenSide::Source, 0, Ls};
    // Luong's local-p weights the window's softmax by a Gaussian around p_t: rows sum to < 1.
    m.normalized = c.rnn_seq2seq()->alignment != Alignment::LocalP;
    trace.describe_attention(std::move(m));
  }
  if (topt.scores)
    // Named like a map's scores companion, after the model ("seq2seq.scores", "pointer.scores").
    trace_matrix(trace, companion_array_name(kind, Companion::Scores),
                 std::string("pre-softmax scores, score function ") +
                     score_function_name(c.score_function().function) +
                     ", -inf outside the window [1, Lt, Ls]",
                 scores, {1, Lt, Ls});
  if (!centers.empty()) {
    Tensor ct({Lt});
    std::copy(centers.begin(), centers.end(), ct.data.begin());
    trace.add(kind + ".local_center", "centre p_t of the local window per target step [Lt]", std::move(ct));
  }
  if (pointer) {
    Tensor idx({Lt});
    for (int64_t t = 0; t < Lt; ++t) idx.data[size_t(t)] = float(pointed[size_t(t)]);
    trace.add("pointer.indices", greedy ? "greedy pointer c_t (argmax, no repeats) [Lt]"
                                        : "teacher-forced pointer c_t (target as input positions) [Lt]",
              std::move(idx), DType::I32);
  }
  if (topt.hidden) {
    trace_matrix(trace, kind + ".encoder_states", "encoder annotations h_i = [fwd; bwd] [Ls, E]",
                 enc, {Ls, enc.cols()});
    trace_matrix(trace, kind + ".decoder_states", "decoder states s_t [Lt, H]", dec_states, {Lt, H});
  }
  if (pointer) {
    result.output = Tensor::from_mat(align);
    trace.add("output", "pointer distribution per step [Lt, Ls]", result.output);
  } else {
    result.output = Tensor::from_mat(logits);
    result.is_logits = true;
    trace.add(model_arrays::kLogits, "output logits per target step [Lt, vocab]", result.output);
  }
  return result;
}

}  // namespace atlas
