#include "core/model/estimate.h"

#include <sstream>

#include "core/model/params.h"
#include "core/model/mechanism_module.h"
#include "core/model/qk_positions.h"
#include "core/model/stack_kind_module.h"

namespace atlas {

namespace {

const char* name_of(Architecture a) {
  switch (a) {
    case Architecture::Encoder: return "encoder";
    case Architecture::Decoder: return "decoder (causal)";
    case Architecture::EncoderDecoder: return "encoder-decoder";
  }
  return "?";
}

}  // namespace

CostEstimate estimate_cost(const ModelConfig& c, int64_t L) {
  CostEstimate e;
  e.parameters = parameter_count(c);
  e.weight_bytes = 4.0 * double(e.parameters);
  const double d = double(c.d_model), h = double(c.n_heads), dh = double(c.d_head());
  const double ff = double(c.d_ff), l = double(L);
  int64_t attn_layers = 0, ffn_layers = 0;
  if (c.has_encoder()) {
    attn_layers += c.n_layers;
    ffn_layers += c.n_layers;
  }
  if (c.has_decoder()) {
    const int64_t n = c.decoder_layers();
    attn_layers += (c.architecture == Architecture::EncoderDecoder ? 2 : 1) * n;
    ffn_layers += n;
  }
  // Per attention layer: q and o projections (2 L d w each, w = n_heads d_head, d unless
  // attention.head_dim), k and v (2 L d kv each, kv = kv_heads d_head), QK^T and PV (2 L L w
  // each); per FFN 2 (3 when gated) matrices of d x ff.
  const double kv = double(c.kv_heads()) * dh, w = double(c.attention_width());
  const double attn_flops = 2 * 2 * l * d * w + 2 * 2 * l * d * kv + 2 * 2 * l * l * w;
  const double ffn_flops = (c.ffn.gated ? 3 : 2) * 2 * l * d * ff;
  e.flops = double(attn_layers) * attn_flops + double(ffn_layers) * ffn_flops;
  if (c.output != OutputHead::None) e.flops += 2 * l * d * double(c.vocab_size);
  const StackKindModule* kind = stack_kind_module(c);  // core/model/stack_kind_module.h
  if (kind && kind->extra_flops) e.flops += kind->extra_flops(c, l);
  e.attention_bytes = double(attn_layers) * 4.0 * (h * l * l + h * dh * l);
  e.activation_bytes = double(ffn_layers) * 4.0 * (l * ff + 4 * l * d);
  return e;
}

std::string describe_architecture(const ModelConfig& c) {
  std::ostringstream s;
  s << "name: " << c.name << "\n";
  if (!c.description.empty()) s << "description: " << c.description << "\n";
  s << "architecture: " << name_of(c.architecture) << "\n";
  const StackKindModule* kind = stack_kind_module(c);  // core/model/stack_kind_module.h
  if (kind && kind->describe_head) kind->describe_head(c, s);
  for (const AttentionMechanismModule* m : mechanisms_for(c))  // core/model/mechanism_module.h
    if (m->describe) m->describe(c, s);
  if (kind && kind->host) {  // a model of its own: the Transformer lines do not apply
    if (kind->describe_tail) kind->describe_tail(c, s);
    return s.str();
  }
  if (c.has_encoder()) s << "encoder layers: " << c.n_layers << "\n";
  if (c.has_decoder()) s << "decoder layers: " << c.decoder_layers() << "\n";
  s << "d_model: " << c.d_model << ", heads: " << c.n_heads << " (d_head " << c.d_head()
    << "), d_ff: " << c.d_ff << "\n";
  s << "vocab: " << c.vocab_size << " ("
    << (c.tokenizer.kind == TokenizerKind::Bytes   ? "bytes"
        : c.tokenizer.kind == TokenizerKind::Chars ? "characters"
        : c.tokenizer.kind == TokenizerKind::Words ? "words"
        : c.tokenizer.kind == TokenizerKind::Gpt2Bpe ? "GPT-2 byte-level BPE"
        : c.tokenizer.kind == TokenizerKind::Labels  ? "class labels"
        : c.tokenizer.kind == TokenizerKind::ByteLevelBpe ? "byte-level BPE (tokenizer.json)"
        : c.tokenizer.kind == TokenizerKind::SentencePieceBpe ? "SentencePiece BPE (tokenizer.json)"
                                                     : "WordPiece")
    << "), max positions: " << c.max_positions << "\n";
  if (c.embeddings.token_types > 0 || c.embeddings.norm)
    s << "embeddings: " << c.embeddings.token_types << " token types"
      << (c.embeddings.norm ? ", normalised" : "") << "\n";
  s << "positions: "
    << (c.positional == Positional::None                   ? "none"
        : c.positional == Positional::Learned              ? "learned"
        : qk_positions_module(c)                           ? qk_positions_module(c)->describe(c)
        : c.sinusoid_layout == SinusoidLayout::Interleaved ? "sinusoidal (interleaved)"
                                                           : "sinusoidal (concatenated)")
    << (c.scale_embedding ? ", embeddings scaled by sqrt(d)" : "") << "\n";
  s << "block: " << (c.norm_position == NormPosition::Post ? "post-norm" : "pre-norm") << ", "
    << (c.norm == NormKind::LayerNorm ? "LayerNorm" : c.norm == NormKind::RmsNorm ? "RMSNorm" : "ScaleNorm")
    << (c.fixnorm ? " + FixNorm" : "") << ", FFN "
    << (c.activation == FfnActivation::ReLU   ? "ReLU"
        : c.activation == FfnActivation::Gelu ? "GELU (erf)"
        : c.activation == FfnActivation::Silu ? "SiLU"
                                              : "GELU (tanh)")
    << (c.ffn.gated ? " gated (GLU)" : "") << "\n";
  if (c.kv_heads() != c.n_heads)
    s << "attention: grouped-query, " << c.kv_heads() << (c.kv_heads() == 1 ? " key/value head" : " key/value heads") << " for " << c.n_heads
      << " query heads\n";
  if (c.attention.sliding_window > 0)
    s << "attention: sliding window of " << c.attention.sliding_window << " keys\n";
  if (kind && kind->describe_tail) kind->describe_tail(c, s);
  s << "output: "
    << (c.output == OutputHead::Tied     ? "tied to the embedding"
        : c.output == OutputHead::Untied ? "separate projection"
                                         : "none (hidden states)")
    << "\n";
  return s.str();
}

}  // namespace atlas
