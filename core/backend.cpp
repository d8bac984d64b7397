#include "backend.h"

#include <algorithm>
#include <atomic>
#include <cstdio>

namespace atlas {

Backend::Backend() {
  static std::atomic<uint64_t> next{1};
  instance_id_ = next++;
}

const char* op_name(Op op) {
  switch (op) {
    case Op::Linear: return "linear";
    case Op::Add: return "add";
    case Op::Scale: return "scale";
    case Op::LayerNorm: return "layer_norm";
    case Op::ScaleNorm: return "scale_norm";
    case Op::Activation: return "activation";
    case Op::Embedding: return "embedding";
    case Op::Attention: return "attention";
    case Op::RowNormalize: return "row_normalize";
    case Op::ShawAttention: return "shaw_attention";
    case Op::AdaptiveSpan: return "adaptive_span";
    case Op::XlAttention: return "xl_attention";
    case Op::SparseAttention: return "sparse_attention";
    case Op::LshAttention: return "lsh_attention";
    case Op::PerformerAttention: return "performer_attention";
    case Op::ActHalting: return "act_halting";
    case Op::ScoreFunction: return "score_function";
    case Op::GtrxlGate: return "gtrxl_gate";
    case Op::HostModel: return "host_model";
  }
  return "?";
}

std::string host_fallback_line(Op op) {
  const char* what = "";
  switch (op) {
    case Op::ShawAttention:
      what = "Shaw relative-position attention (scores, softmax, value term) computed on the host";
      break;
    case Op::AdaptiveSpan:
      what = "adaptive-span masked attention (scores, soft mask, softmax) computed on the host";
      break;
    case Op::XlAttention:
      what = "Transformer-XL layers (projections, relative attention, memory) computed on the "
             "host; the norms and feed-forward run on the backend";
      break;
    case Op::SparseAttention:
      what = "sparse CSR attention computed on the host";
      break;
    case Op::LshAttention:
      what = "LSH attention (hashing, sorting, chunked attention) computed on the host";
      break;
    case Op::PerformerAttention:
      what = "Performer FAVOR+ attention (features, linear attention) computed on the host";
      break;
    case Op::ActHalting:
      what = "ACT halting (halting probabilities, weighted state update) computed on the host; "
             "the per-step block runs on the backend";
      break;
    case Op::ScoreFunction:
      what = "attention with a seed-004 score function (scores, softmax) computed on the host";
      break;
    case Op::GtrxlGate:
      what = "GTrXL gating layers computed on the host";
      break;
    case Op::HostModel:
      what = "the whole model (recurrent seq2seq, NTM, SAGAN or SNAIL) runs on the host; the backend "
             "is not used";
      break;
    default:
      what = "computed on the host";
      break;
  }
  return std::string(op_name(op)) + ": " + what +
         " (inputs downloaded, result uploaded: no device kernel)";
}

void Backend::note_fallback(const std::string& line) {
  if (std::find(fallbacks_.begin(), fallbacks_.end(), line) != fallbacks_.end()) return;
  fallbacks_.push_back(line);
  std::fprintf(stderr, "atlas: %s: %s\n", name().c_str(), line.c_str());
}

}  // namespace atlas
