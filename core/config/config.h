#pragma once
// The model as composition (DESIGN.md): one config struct of orthogonal choices. Parsing is
// strict: unknown keys are rejected with the nearest known key suggested, and every value is
// range-checked, because a silently ignored typo shows the user a different model.
// The JSON schema is documented in docs/model-format.md.
#include <cstdint>
#include <string>
#include <vector>

#include "core/config/attention_kind.h"
#include "core/config/block_config.h"
#include "core/config/config_embeddings.h"
#include "core/config/stack_kind.h"
#include "core/variants/rotary/rope_config.h"

namespace atlas {

enum class Architecture { Encoder, Decoder, EncoderDecoder };
// Rotary rotates q and k in every self-attention instead of adding to the embeddings
// (core/variants/rotary/rope.h).
enum class Positional { None, Sinusoidal, Learned, Rotary };
enum class SinusoidLayout { Interleaved, Concatenated };
// RmsNorm: x / sqrt(mean(x^2) + eps) * w (Zhang & Sennrich 2019; Llama).
enum class NormKind { LayerNorm, ScaleNorm, RmsNorm };
enum class NormPosition { Post, Pre };
enum class FfnActivation { ReLU, Gelu, GeluTanh, Silu };  // silu(x) = x sigmoid(x)
enum class OutputHead { Tied, Untied, None };
// Gpt2Bpe and WordPiece are the tokenizers of Hugging Face checkpoints: their
// vocab (and merges) come from the checkpoint's files (core/formats/hf/hf_tokenizer_files.h). Labels is
// the "tokenizer" of an image classifier (ViT): no text input, its vocab names the classes.
// ByteLevelBpe (Llama 3, Qwen2) and SentencePieceBpe (Llama 2, Mistral, Gemma, Phi-3) are the
// tokenizer.json pipelines of Llama-family checkpoints (core/tokenizers/hf_bpe_tokenizer.h).
enum class TokenizerKind {
  Bytes, Chars, Words, Gpt2Bpe, WordPiece, Labels, ByteLevelBpe, SentencePieceBpe
};
// byte_level_bpe: the pre-tokenisation regex of tokenizer.json's Split pre-tokenizer, each
// implemented by hand (core/tokenizers/hf_pretokenize.h); for GGUF files, the split rules
// llama.cpp gives its pre types (core/tokenizers/llamacpp_pretokenize.h; Gpt2 is one of them).
enum class SplitRegex {
  Llama3, Qwen2, Gpt2,
  LlamaCppDefault, LlamaCppLlama3, LlamaCppQwen2, LlamaCppStarcoder, LlamaCppFalcon,
  LlamaCppDeepseekLlm, LlamaCppDeepseekCoder, LlamaCppBloom, LlamaCppViking, LlamaCppTekken,
  LlamaCppChameleon, LlamaCppGpt4o, LlamaCppJais2, LlamaCppSeedCoder, LlamaCppUfakzeka,
  LlamaCppLaguna, LlamaCppBailingMoe, LlamaCppMiniCpm5
};
// sentencepiece_bpe: where a "▁" is put in front of the text (spaces always become "▁").
//   Prepend  normalizer Prepend("▁") (older files): before every piece of text between added
//            tokens, even one that already starts with a space
//   First    pre-tokenizer Metaspace, prepend_scheme "first": only before the text at offset 0,
//            and not when it already starts with a space
//   Always   Metaspace "always": before every piece not already starting with a space
enum class SpacePrefix { None, Prepend, First, Always };

// A token of tokenizer.json's added_tokens (<|begin_of_text|>, <s>, <|im_start|>): matched whole
// in the text before BPE, longest first. The flags are those of the `tokenizers` library.
struct AddedToken {
  std::string content;
  bool lstrip = false;       // also takes the whitespace before it
  bool rstrip = false;       // also takes the whitespace after it
  bool single_word = false;  // only where no word character touches it
  bool normalized = false;   // matched in the normalized text, not the raw text
  bool operator==(const AddedToken&) const = default;
};

struct TokenizerConfig {
  TokenizerKind kind = TokenizerKind::Bytes;
  // chars: one UTF-8 character each; words: one word each; gpt2_bpe: the byte-level unicode
  // strings of vocab.json by id; wordpiece: the lines of vocab.txt ("##" marks continuations)
  std::vector<std::string> vocab;
  std::string unk = "<unk>";  // chars/words/wordpiece: the unknown token (must be in vocab)
  bool lowercase = false;     // words: lower-case ASCII; wordpiece: Unicode lower-case
  // gpt2_bpe: the merge rules of merges.txt, "left right" each, highest priority first
  std::vector<std::string> merges;
  bool strip_accents = false;       // wordpiece: NFD + drop combining marks (Mn)
  std::string cls = "[CLS]";        // wordpiece: starts every sequence
  std::string sep = "[SEP]";        // wordpiece: ends each segment
  int64_t max_chars_per_word = 100;  // wordpiece: longer words become unk
  // byte_level_bpe and sentencepiece_bpe (vocab: model.vocab and added_tokens by id; merges
  // as for gpt2_bpe; unk: the unknown token of sentencepiece_bpe, "" for none)
  SplitRegex split_regex = SplitRegex::Llama3;  // byte_level_bpe
  bool nfc = false;                             // byte_level_bpe: normalizer NFC (Qwen2)
  SpacePrefix space_prefix = SpacePrefix::None;  // sentencepiece_bpe
  bool metaspace_split = false;  // sentencepiece_bpe: BPE each "▁word" apart (Metaspace split)
  bool byte_fallback = false;    // sentencepiece_bpe: unknown characters as "<0x41>" byte tokens
  bool ignore_merges = false;    // a piece that is itself in the vocab is that token (Llama 3)
  std::vector<AddedToken> added_tokens;
  std::string bos;  // prepended to every text ("" = none), e.g. "<s>", "<|begin_of_text|>"
  std::string eos;  // appended to every text ("" = none)
};

struct ModelConfig {
  std::string name;
  std::string description;
  Architecture architecture = Architecture::Encoder;
  TokenizerConfig tokenizer;
  int64_t vocab_size = 256;
  int64_t d_model = 64;
  int64_t n_heads = 4;
  int64_t d_ff = 256;
  int64_t n_layers = 2;          // encoder layers; decoder layers of a decoder-only model
  int64_t n_decoder_layers = 0;  // encoder-decoder only
  int64_t max_positions = 512;
  Positional positional = Positional::Sinusoidal;
  SinusoidLayout sinusoid_layout = SinusoidLayout::Interleaved;
  bool scale_embedding = true;  // multiply token embeddings by sqrt(d_model) (seed 002)
  NormKind norm = NormKind::LayerNorm;
  NormPosition norm_position = NormPosition::Post;
  float norm_eps = 1e-5f;
  bool fixnorm = false;  // unit-normalise embedding rows (input and tied output)
  FfnActivation activation = FfnActivation::ReLU;
  bool attention_bias = true;
  bool ffn_bias = true;
  OutputHead output = OutputHead::Tied;
  int64_t pad_id = -1;  // token id masked out as a key; -1 = none
  int64_t bos_id = -1;  // prepended to the decoder input of encoder-decoder models; -1 = none
  uint64_t seed = 0;
  float init_std = 0.02f;
  // The standard stacks, or the Universal Transformer, Transformer-XL / GTrXL, Reformer's
  // reversible stack, the recurrent seq2seq, NTM, SAGAN or SNAIL in their place: one choice
  // (core/config/stack_kind.h).
  StackKind stack;
  // Softmax attention (with Shaw's relative positions and/or an adaptive span), or a sparse
  // pattern, LSH, Performer or another score function in its place: one choice
  // (core/config/attention_kind.h).
  AttentionKind attention_kind;
  EmbeddingOptions embeddings;  // BERT token types, embedding norm, ViT patches
  HeadOptions head;             // BERT's MLM head transform, output bias
  RopeConfig rope;              // positional "rotary" (core/variants/rotary/rope_config.h)
  AttentionLayout attention;    // grouped-query heads, sliding window (block_config.h)
  FfnOptions ffn;               // gated feed-forward (block_config.h)

  // The stack kind's config when the stack is of that kind, else nullptr.
  const UniversalConfig* universal() const { return std::get_if<UniversalConfig>(&stack); }
  UniversalConfig* universal() { return std::get_if<UniversalConfig>(&stack); }
  const XLConfig* xl() const { return std::get_if<XLConfig>(&stack); }
  XLConfig* xl() { return std::get_if<XLConfig>(&stack); }
  const ReversibleConfig* reversible() const { return std::get_if<ReversibleConfig>(&stack); }
  ReversibleConfig* reversible() { return std::get_if<ReversibleConfig>(&stack); }
  const Seq2SeqConfig* rnn_seq2seq() const { return std::get_if<Seq2SeqConfig>(&stack); }
  Seq2SeqConfig* rnn_seq2seq() { return std::get_if<Seq2SeqConfig>(&stack); }
  const NtmConfig* ntm() const { return std::get_if<NtmConfig>(&stack); }
  NtmConfig* ntm() { return std::get_if<NtmConfig>(&stack); }
  const SaganConfig* sagan() const { return std::get_if<SaganConfig>(&stack); }
  SaganConfig* sagan() { return std::get_if<SaganConfig>(&stack); }
  const SnailConfig* snail() const { return std::get_if<SnailConfig>(&stack); }
  SnailConfig* snail() { return std::get_if<SnailConfig>(&stack); }
  // GTrXL's gates: set on a Transformer-XL stack with gating, else nullptr.
  const GatingConfig* gating() const { return xl() && xl()->gating ? &*xl()->gating : nullptr; }
  GatingConfig* gating() { return xl() && xl()->gating ? &*xl()->gating : nullptr; }
  bool standard_stack() const { return std::holds_alternative<StandardStack>(stack); }

  // The attention kind's config when the attention is of that kind, else nullptr.
  const SoftmaxAttention* softmax() const { return std::get_if<SoftmaxAttention>(&attention_kind); }
  SoftmaxAttention* softmax() { return std::get_if<SoftmaxAttention>(&attention_kind); }
  const SparseConfig* sparse() const { return std::get_if<SparseConfig>(&attention_kind); }
  SparseConfig* sparse() { return std::get_if<SparseConfig>(&attention_kind); }
  const LshConfig* lsh() const { return std::get_if<LshConfig>(&attention_kind); }
  LshConfig* lsh() { return std::get_if<LshConfig>(&attention_kind); }
  const PerformerConfig* performer() const { return std::get_if<PerformerConfig>(&attention_kind); }
  PerformerConfig* performer() { return std::get_if<PerformerConfig>(&attention_kind); }
  // Another score function than scaled dot (seed 004), else nullptr.
  const ScoreConfig* score() const { return std::get_if<ScoreConfig>(&attention_kind); }
  ScoreConfig* score() { return std::get_if<ScoreConfig>(&attention_kind); }
  // Shaw's relation tables and the adaptive span: set on softmax attention that has them.
  const ShawConfig* shaw() const {
    return softmax() && softmax()->shaw ? &*softmax()->shaw : nullptr;
  }
  ShawConfig* shaw() { return softmax() && softmax()->shaw ? &*softmax()->shaw : nullptr; }
  const AdaptiveSpanConfig* adaptive_span() const {
    return softmax() && softmax()->adaptive_span ? &*softmax()->adaptive_span : nullptr;
  }
  AdaptiveSpanConfig* adaptive_span() {
    return softmax() && softmax()->adaptive_span ? &*softmax()->adaptive_span : nullptr;
  }
  // The alignment score of every attention layer, the recurrent seq2seq's included: the score
  // kind's, or scaled dot with ScoreConfig's defaults.
  ScoreConfig score_function() const { return score() ? *score() : ScoreConfig{}; }

  int64_t d_head() const { return attention.head_dim > 0 ? attention.head_dim : d_model / n_heads; }
  // The width of the heads side by side: wq's rows and wo's columns (d_model unless head_dim
  // says otherwise).
  int64_t attention_width() const { return n_heads * d_head(); }
  int64_t kv_heads() const { return attention.kv_heads > 0 ? attention.kv_heads : n_heads; }
  bool has_encoder() const { return architecture != Architecture::Decoder; }
  bool has_decoder() const { return architecture != Architecture::Encoder; }
  int64_t decoder_layers() const {
    return architecture == Architecture::Decoder ? n_layers : n_decoder_layers;
  }
};

// Parses and validates. `origin` names the source in messages (a file path or "preset:NAME").
ModelConfig parse_config(const std::string& json_text, const std::string& origin);
std::string config_to_json(const ModelConfig& config);  // pretty, round-trips through parse
void validate_config(const ModelConfig& config, const std::string& origin);

// Levenshtein distance; used to suggest the nearest known key.
size_t edit_distance(const std::string& a, const std::string& b);
std::string nearest(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace atlas
