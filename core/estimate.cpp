#include "estimate.h"

#include <sstream>

#include "params.h"

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
  // Per attention layer: 4 projections (2 L d d each), QK^T and PV (2 L L d each).
  const double attn_flops = 4 * 2 * l * d * d + 2 * 2 * l * l * d;
  const double ffn_flops = 2 * 2 * l * d * ff;
  e.flops = double(attn_layers) * attn_flops + double(ffn_layers) * ffn_flops;
  if (c.output != OutputHead::None) e.flops += 2 * l * d * double(c.vocab_size);
  e.attention_bytes = double(attn_layers) * 4.0 * (h * l * l + h * dh * l);
  e.activation_bytes = double(ffn_layers) * 4.0 * (l * ff + 4 * l * d);
  return e;
}

std::string describe_architecture(const ModelConfig& c) {
  std::ostringstream s;
  s << "name: " << c.name << "\n";
  if (!c.description.empty()) s << "description: " << c.description << "\n";
  s << "architecture: " << name_of(c.architecture) << "\n";
  if (c.has_encoder()) s << "encoder layers: " << c.n_layers << "\n";
  if (c.has_decoder()) s << "decoder layers: " << c.decoder_layers() << "\n";
  s << "d_model: " << c.d_model << ", heads: " << c.n_heads << " (d_head " << c.d_head()
    << "), d_ff: " << c.d_ff << "\n";
  s << "vocab: " << c.vocab_size << " ("
    << (c.tokenizer.kind == TokenizerKind::Bytes   ? "bytes"
        : c.tokenizer.kind == TokenizerKind::Chars ? "characters"
        : c.tokenizer.kind == TokenizerKind::Words ? "words"
        : c.tokenizer.kind == TokenizerKind::Gpt2Bpe ? "GPT-2 byte-level BPE"
                                                     : "WordPiece")
    << "), max positions: " << c.max_positions << "\n";
  if (c.embeddings.token_types > 0 || c.embeddings.norm)
    s << "embeddings: " << c.embeddings.token_types << " token types"
      << (c.embeddings.norm ? ", normalised" : "") << "\n";
  s << "positions: "
    << (c.positional == Positional::None         ? "none"
        : c.positional == Positional::Learned    ? "learned"
        : c.sinusoid_layout == SinusoidLayout::Interleaved ? "sinusoidal (interleaved)"
                                                           : "sinusoidal (concatenated)")
    << (c.scale_embedding ? ", embeddings scaled by sqrt(d)" : "") << "\n";
  s << "block: " << (c.norm_position == NormPosition::Post ? "post-norm" : "pre-norm") << ", "
    << (c.norm == NormKind::LayerNorm ? "LayerNorm" : "ScaleNorm")
    << (c.fixnorm ? " + FixNorm" : "") << ", FFN "
    << (c.activation == FfnActivation::ReLU   ? "ReLU"
        : c.activation == FfnActivation::Gelu ? "GELU (erf)"
                                              : "GELU (tanh)")
    << "\n";
  s << "output: "
    << (c.output == OutputHead::Tied     ? "tied to the embedding"
        : c.output == OutputHead::Untied ? "separate projection"
                                         : "none (hidden states)")
    << "\n";
  return s.str();
}

}  // namespace atlas
