// BERT family (bert-base/large, cased and uncased) and DistilBERT from Hugging Face: post-norm
// encoders with learned positions, GELU (erf form) and LayerNorm eps 1e-12 (HF modeling_bert.py,
// modeling_distilbert.py). BERT adds token-type (segment) embeddings; both normalise the summed
// embeddings (engine options embeddings.token_types / embeddings.norm). Linear weights are
// already [out, in]. The masked-LM head, when the checkpoint has one (BertForMaskedLM,
// BertForPreTraining, DistilBertForMaskedLM), becomes the engine's output head with
// head.transform and head.bias, so the model predicts [MASK] fills; without it the model
// outputs the final hidden states. The pooler and the next-sentence head are not loaded.
#include <string>

#include "core/formats/hf/hf_families.h"

namespace atlas::hf {
namespace {

void encoder_defaults(ModelConfig& c) {
  c.architecture = Architecture::Encoder;
  c.positional = Positional::Learned;
  c.scale_embedding = false;
  c.norm = NormKind::LayerNorm;
  c.norm_position = NormPosition::Post;
  c.attention_bias = true;
  c.ffn_bias = true;
  c.output = OutputHead::None;
  c.embeddings.norm = true;
}

ModelConfig bert_config(const ConfigReader& r) {
  ModelConfig c;
  encoder_defaults(c);
  c.vocab_size = r.dimension("vocab_size", kMaxVocab);
  c.d_model = r.dimension("hidden_size", kMaxDModel);
  c.n_layers = r.dimension("num_hidden_layers", kMaxLayers);
  c.n_heads = r.dimension("num_attention_heads", kMaxHeads);
  c.d_ff = r.dimension("intermediate_size", kMaxDff);
  c.max_positions = r.integer("max_position_embeddings", 512);
  c.embeddings.token_types = r.integer("type_vocab_size", 2);
  c.norm_eps = static_cast<float>(r.number("layer_norm_eps", 1e-12));
  c.activation = activation_from(r, "hidden_act", "gelu");
  c.pad_id = r.integer("pad_token_id", 0);
  const std::string pe = r.string("position_embedding_type", "absolute");
  if (pe != "absolute")
    r.refuse("position_embedding_type \"" + pe + "\" is not supported (only \"absolute\")");
  return c;
}

ModelConfig distilbert_config(const ConfigReader& r) {
  ModelConfig c;
  encoder_defaults(c);
  c.vocab_size = r.dimension("vocab_size", kMaxVocab);
  c.d_model = r.dimension("dim", kMaxDModel);
  c.n_layers = r.dimension("n_layers", kMaxLayers);
  c.n_heads = r.dimension("n_heads", kMaxHeads);
  c.d_ff = r.dimension("hidden_dim", kMaxDff);
  c.max_positions = r.integer("max_position_embeddings", 512);
  c.norm_eps = 1e-12f;  // fixed in modeling_distilbert.py
  c.activation = activation_from(r, "activation", "gelu");
  c.pad_id = r.integer("pad_token_id", 0);
  if (r.boolean("sinusoidal_pos_embds", false))
    r.refuse("sinusoidal_pos_embds true is not supported (learned positions only)");
  return c;
}

// Older BERT files name LayerNorm parameters gamma/beta instead of weight/bias.
void layer_norm(TensorSource& src, ParamStore& out, const std::string& hf,
                const std::string& engine, int64_t d) {
  const bool old = src.has(hf + ".gamma");
  out[engine + ".gamma"] = src.take(hf + (old ? ".gamma" : ".weight"), {d});
  out[engine + ".beta"] = src.take(hf + (old ? ".beta" : ".bias"), {d});
}

void linear(TensorSource& src, ParamStore& out, const std::string& hf, const std::string& w,
            const std::string& b, int64_t out_dim, int64_t in_dim) {
  out[w] = src.take(hf + ".weight", {out_dim, in_dim});
  out[b] = src.take(hf + ".bias", {out_dim});
}

// The masked-LM head: dense + activation + LayerNorm, then the word embeddings (tied; the
// checkpoint's decoder.weight / vocab_projector.weight copy is skipped) plus a vocab bias.
void mlm_head(ModelConfig& c) {
  c.output = OutputHead::Tied;
  c.head.transform = true;
  c.head.bias = true;
}

void bert_params(ModelConfig& c, TensorSource& src, ParamStore& out) {
  const int64_t d = c.d_model, f = c.d_ff;
  out["embed.tokens"] = src.take("embeddings.word_embeddings.weight", {c.vocab_size, d});
  out["embed.positions"] = src.take("embeddings.position_embeddings.weight", {c.max_positions, d});
  out["embed.token_types"] =
      src.take("embeddings.token_type_embeddings.weight", {c.embeddings.token_types, d});
  layer_norm(src, out, "embeddings.LayerNorm", "embed.norm", d);
  for (int64_t i = 0; i < c.n_layers; ++i) {
    const std::string h = "encoder.layer." + std::to_string(i), p = "encoder.layer" + std::to_string(i);
    linear(src, out, h + ".attention.self.query", p + ".attn.wq", p + ".attn.bq", d, d);
    linear(src, out, h + ".attention.self.key", p + ".attn.wk", p + ".attn.bk", d, d);
    linear(src, out, h + ".attention.self.value", p + ".attn.wv", p + ".attn.bv", d, d);
    linear(src, out, h + ".attention.output.dense", p + ".attn.wo", p + ".attn.bo", d, d);
    layer_norm(src, out, h + ".attention.output.LayerNorm", p + ".attn_norm", d);
    linear(src, out, h + ".intermediate.dense", p + ".ffn.w1", p + ".ffn.b1", f, d);
    linear(src, out, h + ".output.dense", p + ".ffn.w2", p + ".ffn.b2", d, f);
    layer_norm(src, out, h + ".output.LayerNorm", p + ".ffn_norm", d);
  }
  if (src.has("cls.predictions.transform.dense.weight")) {  // BertForMaskedLM / ForPreTraining
    mlm_head(c);
    linear(src, out, "cls.predictions.transform.dense", "output.transform.weight",
           "output.transform.bias", d, d);
    layer_norm(src, out, "cls.predictions.transform.LayerNorm", "output.transform_norm", d);
    out["output.bias"] = src.take("cls.predictions.bias", {c.vocab_size});
  }
}

void distilbert_params(ModelConfig& c, TensorSource& src, ParamStore& out) {
  const int64_t d = c.d_model, f = c.d_ff;
  out["embed.tokens"] = src.take("embeddings.word_embeddings.weight", {c.vocab_size, d});
  out["embed.positions"] = src.take("embeddings.position_embeddings.weight", {c.max_positions, d});
  layer_norm(src, out, "embeddings.LayerNorm", "embed.norm", d);
  for (int64_t i = 0; i < c.n_layers; ++i) {
    const std::string h = "transformer.layer." + std::to_string(i),
                      p = "encoder.layer" + std::to_string(i);
    linear(src, out, h + ".attention.q_lin", p + ".attn.wq", p + ".attn.bq", d, d);
    linear(src, out, h + ".attention.k_lin", p + ".attn.wk", p + ".attn.bk", d, d);
    linear(src, out, h + ".attention.v_lin", p + ".attn.wv", p + ".attn.bv", d, d);
    linear(src, out, h + ".attention.out_lin", p + ".attn.wo", p + ".attn.bo", d, d);
    layer_norm(src, out, h + ".sa_layer_norm", p + ".attn_norm", d);
    linear(src, out, h + ".ffn.lin1", p + ".ffn.w1", p + ".ffn.b1", f, d);
    linear(src, out, h + ".ffn.lin2", p + ".ffn.w2", p + ".ffn.b2", d, f);
    layer_norm(src, out, h + ".output_layer_norm", p + ".ffn_norm", d);
  }
  if (src.has("vocab_transform.weight")) {  // DistilBertForMaskedLM
    mlm_head(c);
    linear(src, out, "vocab_transform", "output.transform.weight", "output.transform.bias", d, d);
    layer_norm(src, out, "vocab_layer_norm", "output.transform_norm", d);
    out["output.bias"] = src.take("vocab_projector.bias", {c.vocab_size});
  }
}

bool starts_with(const std::string& s, const std::string& head) { return s.rfind(head, 0) == 0; }

bool bert_skippable(const std::string& name) {
  return name.find("embeddings.position_ids") != std::string::npos ||
         starts_with(name, "pooler.") || starts_with(name, "bert.pooler.") ||
         starts_with(name, "cls.");
}

bool distilbert_skippable(const std::string& name) {
  return name.find("embeddings.position_ids") != std::string::npos ||
         starts_with(name, "vocab_") || starts_with(name, "pre_classifier.") ||
         starts_with(name, "classifier.") || starts_with(name, "qa_outputs.");
}

}  // namespace

Family bert_family() { return {"bert", {"bert."}, bert_config, bert_params, bert_skippable}; }
Family distilbert_family() {
  return {"distilbert", {"distilbert."}, distilbert_config, distilbert_params, distilbert_skippable};
}

}  // namespace atlas::hf
