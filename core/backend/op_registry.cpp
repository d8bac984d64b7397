#include "core/backend/op_registry.h"

#include <array>
#include <string>

#include "core/tensor/error.h"

namespace atlas {

namespace {

constexpr const char* kHost = "computed on the host";

// In enum order (checked below at compile time).
constexpr std::array<OpInfo, static_cast<size_t>(Op::Count)> kOps = {{
    {Op::Linear, "linear", kHost},
    {Op::Add, "add", kHost},
    {Op::Scale, "scale", kHost},
    {Op::LayerNorm, "layer_norm", kHost},
    {Op::ScaleNorm, "scale_norm", kHost},
    {Op::Activation, "activation", kHost},
    {Op::Embedding, "embedding", kHost},
    {Op::Attention, "attention", kHost},
    {Op::RowNormalize, "row_normalize", kHost},
    {Op::RmsNorm, "rms_norm", kHost},
    {Op::Mul, "mul", kHost},
    {Op::RepeatHeads, "repeat_heads", kHost},
    {Op::LshAttention, "lsh_attention",
     "LSH attention (hashing, sorting, chunked attention) computed on the host", false},
    {Op::HostModel, "host_model",
     "the whole model (recurrent seq2seq, NTM, SAGAN or SNAIL) runs on the host; the backend "
     "is not used",
     false},
}};

constexpr bool in_enum_order() {
  for (size_t i = 0; i < kOps.size(); ++i)
    if (kOps[i].op != static_cast<Op>(i)) return false;
  return true;
}
static_assert(in_enum_order(), "kOps: one entry per Op, in the enum's order");

}  // namespace

const std::vector<OpInfo>& op_registry() {
  static const std::vector<OpInfo> all(kOps.begin(), kOps.end());
  return all;
}

const OpInfo& op_info(Op op) {
  const auto i = static_cast<size_t>(op);
  if (i >= kOps.size()) throw AtlasError("op id " + std::to_string(i) + " is not a registered op");
  return kOps[i];
}

const char* op_name(Op op) { return op_info(op).name; }

std::string host_fallback_line(Op op) {
  const OpInfo& info = op_info(op);
  return std::string(info.name) + ": " + info.host_work +
         " (inputs downloaded, result uploaded: no device kernel)";
}

}  // namespace atlas
