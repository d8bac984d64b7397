// Logit lens: for layer l with hidden state h_l [L, d],
//   logits_l = head(norm_final(h_l))     (norm_final only for pre-norm stacks; post-norm
//                                         hidden states are already normalised; head is
//                                         W_out^T, with BERT's transform and bias if set)
//   probs_l  = softmax(logits_l), keep the top k per position.
// The last layer reproduces the model's own logits. Computed on the host from the traced
// hidden states and the parameters, so the forward pass is unchanged.
#include "core/analysis/logit_lens.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/backend/backend.h"
#include "core/model/stack_kind_module.h"
#include "core/tensor/error.h"

namespace atlas {

namespace {

// One norm (LayerNorm or ScaleNorm, parameters under `prefix`) applied to each row.
Mat norm_rows(const ModelConfig& c, const ParamStore& p, const std::string& prefix, Mat h) {
  for (int64_t i = 0; i < h.rows(); ++i) {
    if (c.norm == NormKind::LayerNorm) {
      const float mean = h.row(i).mean();
      const float var = (h.row(i).array() - mean).square().mean();
      const float inv = 1.0f / std::sqrt(var + c.norm_eps);
      for (int64_t k = 0; k < h.cols(); ++k)
        h(i, k) = (h(i, k) - mean) * inv * p.at(prefix + ".gamma").data[size_t(k)] + p.at(prefix + ".beta").data[size_t(k)];
    } else if (c.norm == NormKind::RmsNorm) {
      const float inv = 1.0f / std::sqrt(h.row(i).squaredNorm() / float(h.cols()) + c.norm_eps);
      for (int64_t k = 0; k < h.cols(); ++k) h(i, k) *= inv * p.at(prefix + ".gamma").data[size_t(k)];
    } else {
      const float n = std::max(h.row(i).norm(), c.norm_eps);
      h.row(i) *= p.at(prefix + ".g").data[0] / n;
    }
  }
  return h;
}

Mat final_norm(const ModelConfig& c, const ParamStore& p, const std::string& stack, Mat h) {
  if (c.norm_position != NormPosition::Pre) return h;
  return norm_rows(c, p, stack + ".final_norm", std::move(h));
}

float activate(FfnActivation a, float x) {
  if (a == FfnActivation::ReLU) return std::max(x, 0.0f);
  if (a == FfnActivation::Gelu) return 0.5f * x * (1.0f + std::erf(x / std::sqrt(2.0f)));
  if (a == FfnActivation::Silu) return x / (1.0f + std::exp(-x));
  const float k = std::sqrt(2.0f / 3.14159265358979f);
  return 0.5f * x * (1.0f + std::tanh(k * (x + 0.044715f * x * x * x)));
}

// The output head after the final norm: BERT's MLM transform when configured, the output
// matrix, the output bias when configured.
// h [L, d] times the output matrix transposed: a float table as a Mat, a table held in its
// file's encoding (quantized, 16-bit) through the CPU backend's product, which reads it in place.
Mat table_product(const Mat& h, const Mat& table, const Tensor& held) {
  if (!held.packed) return h * table.transpose();
  const std::unique_ptr<Backend> cpu = make_cpu_backend();
  const Tensor x = Tensor::from_mat(h);
  return cpu->download(cpu->linear(cpu->upload(x), cpu->upload_weight(held), {})).mat();
}

Mat head_logits(const ModelConfig& c, const ParamStore& p, const Mat& table, const Tensor& held,
                Mat h) {
  if (c.head.transform) {
    Mat t = h * p.at("output.transform.weight").mat().transpose();
    const auto& b = p.at("output.transform.bias").data;
    for (int64_t i = 0; i < t.rows(); ++i)
      for (int64_t k = 0; k < t.cols(); ++k) t(i, k) = activate(c.activation, t(i, k) + b[size_t(k)]);
    h = norm_rows(c, p, "output.transform_norm", std::move(t));
  }
  Mat logits = table_product(h, table, held);
  if (c.head.bias) {
    const auto& b = p.at("output.bias").data;
    for (int64_t i = 0; i < logits.rows(); ++i)
      for (int64_t v = 0; v < logits.cols(); ++v) logits(i, v) += b[size_t(v)];
  }
  return logits;
}

}  // namespace

void add_logit_lens(const Model& model, RunResult& result, int64_t top_k) {
  const ModelConfig& c = model.config();
  if (c.output == OutputHead::None)
    throw AtlasError("the logit lens needs a model with an output head; this model has output \"none\"");
  if (top_k < 1 || top_k > c.vocab_size)
    throw AtlasError("logit lens top-k must be in [1, vocab_size = " + std::to_string(c.vocab_size) +
                     "], got " + std::to_string(top_k));
  const StackKindModule* kind = stack_kind_module(c);  // core/model/stack_kind_module.h
  if (kind && kind->no_logit_lens) throw AtlasError(kind->no_logit_lens);
  const std::string stack = c.has_decoder() ? "decoder" : "encoder";
  // A Universal Transformer has steps instead of layers: the lens reads each step's state.
  auto hidden_name = [&](int64_t l) {
    return shared_block_of(c) ? stack + ".step" + std::to_string(l + 1) + ".hidden"
                               : stack + ".layer" + std::to_string(l) + ".hidden";
  };
  int64_t layers = c.has_decoder() ? c.decoder_layers() : c.n_layers;
  if (shared_block_of(c)) {
    layers = 0;
    while (result.trace.find(hidden_name(layers))) ++layers;
    if (layers == 0) layers = 1;  // reports the missing first step below
  }
  const Tensor& held = model.params().at(c.output == OutputHead::Tied ? "embed.tokens" : "output.weight");
  if (c.fixnorm && held.packed)
    throw AtlasError("the logit lens of a FixNorm model needs its embedding as float32");
  Mat table = held.packed ? Mat() : held.mat();  // a packed table is read in place
  if (c.fixnorm && !held.packed)
    for (int64_t v = 0; v < table.rows(); ++v) table.row(v) /= std::max(table.row(v).norm(), 1e-5f);
  Tensor ids, probs;
  int64_t L = 0;
  for (int64_t l = 0; l < layers; ++l) {
    const std::string name = hidden_name(l);
    const TracedArray* h = result.trace.find(name);
    if (!h) throw AtlasError("logit lens: " + name + " was not traced (run with TraceOptions::hidden)");
    if (l == 0) {
      L = h->tensor.shape[0];
      ids = Tensor({layers, L, top_k});
      probs = Tensor({layers, L, top_k});
    }
    const Mat logits = head_logits(c, model.params(), table, held,
                                   final_norm(c, model.params(), stack, h->tensor.mat()));  // [L, V]
    std::vector<int64_t> order(static_cast<size_t>(logits.cols()));
    for (int64_t i = 0; i < L; ++i) {
      const float mx = logits.row(i).maxCoeff();
      double z = 0;
      for (int64_t v = 0; v < logits.cols(); ++v) z += std::exp(double(logits(i, v) - mx));
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + top_k, order.end(), [&](int64_t a, int64_t b) {
        return logits(i, a) > logits(i, b) || (logits(i, a) == logits(i, b) && a < b);
      });
      for (int64_t r = 0; r < top_k; ++r) {
        const size_t at = size_t((l * L + i) * top_k + r);
        ids.data[at] = float(order[size_t(r)]);
        probs.data[at] = float(std::exp(double(logits(i, order[size_t(r)]) - mx)) / z);
      }
    }
  }
  result.trace.add(logit_lens_ids(stack), "top-k next-token ids each layer would predict [layers, L, k]",
                   std::move(ids), DType::I32);
  result.trace.add(logit_lens_probs(stack), "their probabilities [layers, L, k]", std::move(probs));
}

}  // namespace atlas
