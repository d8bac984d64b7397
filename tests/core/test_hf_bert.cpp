// BERT and DistilBERT checkpoints in Hugging Face's exact layout against a naive
// double-precision post-norm encoder written here from the published architecture
// (BERT: Devlin et al.; HF modeling_bert.py): embeddings word + position + token type,
// LayerNorm eps 1e-12, per layer x = LN(x + Attn(x)), x = LN(x + FFN_gelu_erf(x)).
#include <catch2/catch.hpp>

#include <cmath>

#include "core/tensor/error.h"
#include "core/formats/hf/hf_checkpoint.h"
#include "tests/core/hf_test_util.h"
#include "core/formats/model_io.h"

using namespace atlas;
using namespace hf_test;

namespace {

const std::vector<std::string> kWords = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
                                         "the",   "cat",   "sat",   "on",    "mat",
                                         "##s",   "a",     "dog",   ".",     ","};

struct TinyBert {
  int64_t vocab = int64_t(kWords.size()), d = 16, layers = 2, heads = 2, positions = 20,
          inner = 24, types = 2;
};

// HF names of one encoder; `distil` switches to DistilBERT's names (no token types).
HfTensors bert_tensors(const TinyBert& b, const std::string& prefix, bool distil, bool gamma_beta) {
  HfTensors t;
  uint32_t seed = 100;
  auto add = [&](const std::string& name, std::vector<int64_t> shape, float scale = 1.0f) {
    t[prefix + name] = pattern(std::move(shape), seed++, scale);
  };
  auto ln = [&](const std::string& name) {
    add(name + (gamma_beta ? ".gamma" : ".weight"), {b.d}, 4.0f);
    add(name + (gamma_beta ? ".beta" : ".bias"), {b.d});
  };
  auto lin = [&](const std::string& name, int64_t out, int64_t in) {
    add(name + ".weight", {out, in}, 2.0f);  // nn.Linear: [out, in]
    add(name + ".bias", {out});
  };
  add("embeddings.word_embeddings.weight", {b.vocab, b.d});
  add("embeddings.position_embeddings.weight", {b.positions, b.d});
  if (!distil) add("embeddings.token_type_embeddings.weight", {b.types, b.d});
  ln("embeddings.LayerNorm");
  for (int64_t i = 0; i < b.layers; ++i) {
    const std::string n = std::to_string(i);
    if (distil) {
      const std::string h = "transformer.layer." + n;
      lin(h + ".attention.q_lin", b.d, b.d);
      lin(h + ".attention.k_lin", b.d, b.d);
      lin(h + ".attention.v_lin", b.d, b.d);
      lin(h + ".attention.out_lin", b.d, b.d);
      ln(h + ".sa_layer_norm");
      lin(h + ".ffn.lin1", b.inner, b.d);
      lin(h + ".ffn.lin2", b.d, b.inner);
      ln(h + ".output_layer_norm");
    } else {
      const std::string h = "encoder.layer." + n;
      lin(h + ".attention.self.query", b.d, b.d);
      lin(h + ".attention.self.key", b.d, b.d);
      lin(h + ".attention.self.value", b.d, b.d);
      lin(h + ".attention.output.dense", b.d, b.d);
      ln(h + ".attention.output.LayerNorm");
      lin(h + ".intermediate.dense", b.inner, b.d);
      lin(h + ".output.dense", b.d, b.inner);
      ln(h + ".output.LayerNorm");
    }
  }
  return t;
}

// Final hidden states [L, d] of the encoder on (ids, types), from the HF tensors (no prefix).
Matrix naive_bert(const HfTensors& t, const TinyBert& b, bool distil, const std::vector<int>& ids,
             const std::vector<int>& types) {
  const size_t L = ids.size(), d = size_t(b.d), dh = d / size_t(b.heads);
  const std::string ln_w = ".weight", ln_b = ".bias";
  Matrix x(L);
  for (size_t p = 0; p < L; ++p) {
    Vec e(d);
    for (size_t c = 0; c < d; ++c) {
      e[c] = t.at("embeddings.word_embeddings.weight").at(ids[p], int64_t(c)) +
             t.at("embeddings.position_embeddings.weight").at(int64_t(p), int64_t(c));
      if (!distil) e[c] += t.at("embeddings.token_type_embeddings.weight").at(types[p], int64_t(c));
    }
    x[p] =
        naive_layer_norm(e, t.at("embeddings.LayerNorm.weight"), t.at("embeddings.LayerNorm.bias"));
  }
  for (int64_t layer = 0; layer < b.layers; ++layer) {
    const std::string n = std::to_string(layer);
    const std::string h = distil ? "transformer.layer." + n : "encoder.layer." + n;
    auto W = [&](const std::string& bert, const std::string& dist, const std::string& what) -> const HfTensor& {
      return t.at(h + (distil ? dist : bert) + what);
    };
    Matrix q(L), k(L), v(L);
    for (size_t p = 0; p < L; ++p) {
      q[p] = naive_linear(x[p], W(".attention.self.query", ".attention.q_lin", ".weight"),
                    W(".attention.self.query", ".attention.q_lin", ".bias"));
      k[p] = naive_linear(x[p], W(".attention.self.key", ".attention.k_lin", ".weight"),
                    W(".attention.self.key", ".attention.k_lin", ".bias"));
      v[p] = naive_linear(x[p], W(".attention.self.value", ".attention.v_lin", ".weight"),
                    W(".attention.self.value", ".attention.v_lin", ".bias"));
    }
    Matrix ctx(L, Vec(d, 0.0));
    for (size_t head = 0; head < size_t(b.heads); ++head)
      for (size_t i = 0; i < L; ++i) {
        Vec s(L);
        double mx = -1e300, z = 0;
        for (size_t j = 0; j < L; ++j) {  // bidirectional
          double dot = 0;
          for (size_t c = 0; c < dh; ++c) dot += q[i][head * dh + c] * k[j][head * dh + c];
          s[j] = dot / std::sqrt(double(dh));
          mx = std::max(mx, s[j]);
        }
        for (double& e : s) z += (e = std::exp(e - mx));
        for (size_t j = 0; j < L; ++j)
          for (size_t c = 0; c < dh; ++c) ctx[i][head * dh + c] += s[j] / z * v[j][head * dh + c];
      }
    for (size_t p = 0; p < L; ++p) {
      Vec o = naive_linear(ctx[p], W(".attention.output.dense", ".attention.out_lin", ".weight"),
                     W(".attention.output.dense", ".attention.out_lin", ".bias"));
      for (size_t c = 0; c < d; ++c) o[c] += x[p][c];
      Vec a = naive_layer_norm(o, W(".attention.output.LayerNorm", ".sa_layer_norm", ln_w),
                         W(".attention.output.LayerNorm", ".sa_layer_norm", ln_b));
      Vec f = naive_linear(a, W(".intermediate.dense", ".ffn.lin1", ".weight"),
                     W(".intermediate.dense", ".ffn.lin1", ".bias"));
      for (double& e : f) e = 0.5 * e * (1 + std::erf(e / std::sqrt(2.0)));  // exact GELU
      Vec g = naive_linear(f, W(".output.dense", ".ffn.lin2", ".weight"),
                           W(".output.dense", ".ffn.lin2", ".bias"));
      for (size_t c = 0; c < d; ++c) g[c] += a[c];
      x[p] = naive_layer_norm(g, W(".output.LayerNorm", ".output_layer_norm", ln_w),
                        W(".output.LayerNorm", ".output_layer_norm", ln_b));
    }
  }
  return x;
}

nlohmann::json bert_config(const TinyBert& b) {
  return {{"model_type", "bert"}, {"architectures", {"BertForMaskedLM"}},
          {"vocab_size", b.vocab}, {"hidden_size", b.d}, {"num_hidden_layers", b.layers},
          {"num_attention_heads", b.heads}, {"intermediate_size", b.inner},
          {"hidden_act", "gelu"}, {"max_position_embeddings", b.positions},
          {"type_vocab_size", b.types}, {"layer_norm_eps", 1e-12}, {"pad_token_id", 0},
          {"position_embedding_type", "absolute"}, {"hidden_dropout_prob", 0.1}};
}

void check_hidden(const Model& m, const Matrix& want, double tol) {
  const std::vector<int> ids = {2, 5, 6, 7, 3, 11, 12, 10, 3};
  const std::vector<int> types = {0, 0, 0, 0, 0, 1, 1, 1, 1};
  std::vector<TokenInfo> tokens;
  for (size_t i = 0; i < ids.size(); ++i) tokens.push_back({ids[i], kWords[size_t(ids[i])], types[i]});
  RunResult r = m.forward(tokens, {}, {});
  REQUIRE_FALSE(r.is_logits);
  const size_t d = size_t(m.config().d_model);
  REQUIRE(r.output.shape == Shape{int64_t(ids.size()), int64_t(d)});
  double worst = 0;
  for (size_t p = 0; p < ids.size(); ++p)
    for (size_t c = 0; c < d; ++c)
      worst = std::max(worst, std::abs(double(r.output.data[p * d + c]) - want[p][c]));
  CHECK(worst < tol);
}

}  // namespace

TEST_CASE("a BERT directory in HF layout matches a naive post-norm BERT with token types", "[hf]") {
  TinyBert b;
  const std::vector<int> ids = {2, 5, 6, 7, 3, 11, 12, 10, 3};
  const std::vector<int> types = {0, 0, 0, 0, 0, 1, 1, 1, 1};
  const Matrix want = naive_bert(bert_tensors(b, "", false, false), b, false, ids, types);
  for (const bool gamma_beta : {false, true}) {
    INFO("LayerNorm names gamma/beta: " << gamma_beta);
    fs::path dir = fresh_dir("bert" + std::to_string(gamma_beta));
    write_text(dir / "config.json", bert_config(b).dump());
    write_bert_vocab(dir, kWords);
    HfTensors t = bert_tensors(b, "bert.", false, gamma_beta);
    // BertForMaskedLM extras that are deliberately not loaded.
    t["bert.embeddings.position_ids"] = HfTensor{{1, b.positions}, std::vector<float>(size_t(b.positions))};
    t["cls.predictions.bias"] = pattern({b.vocab}, 7);
    write_safetensors_file(dir / "model.safetensors", t);
    Model m = load_model(dir.string());
    CHECK(m.config().tokenizer.kind == TokenizerKind::WordPiece);
    CHECK(m.config().embeddings.token_types == 2);
    check_hidden(m, want, 2e-4);
    fs::remove_all(dir);
  }
}

TEST_CASE("a DistilBERT directory in HF layout matches a naive DistilBERT", "[hf]") {
  TinyBert b;
  const std::vector<int> ids = {2, 5, 6, 7, 3, 11, 12, 10, 3};
  const Matrix want =
      naive_bert(bert_tensors(b, "", true, false), b, true, ids, std::vector<int>(ids.size()));
  fs::path dir = fresh_dir("distilbert");
  nlohmann::json j = {{"model_type", "distilbert"}, {"vocab_size", b.vocab}, {"dim", b.d},
                      {"n_layers", b.layers}, {"n_heads", b.heads}, {"hidden_dim", b.inner},
                      {"activation", "gelu"}, {"max_position_embeddings", b.positions},
                      {"sinusoidal_pos_embds", false}, {"pad_token_id", 0}};
  write_text(dir / "config.json", j.dump());
  write_bert_vocab(dir, kWords);
  write_safetensors_file(dir / "model.safetensors", bert_tensors(b, "distilbert.", true, false), "F16");
  Model m = load_model(dir.string());
  // DistilBERT has no token types: the engine model gets none, so type 0 everywhere.
  CHECK(m.config().embeddings.token_types == 0);
  const std::vector<int> types(ids.size(), 0);
  std::vector<TokenInfo> tokens;
  for (int id : ids) tokens.push_back({id, kWords[size_t(id)], 0});
  RunResult r = m.forward(tokens, {}, {});
  double worst = 0;
  for (size_t p = 0; p < ids.size(); ++p)
    for (size_t c = 0; c < size_t(b.d); ++c)
      worst = std::max(worst, std::abs(double(r.output.data[p * size_t(b.d) + c]) - want[p][c]));
  CHECK(worst < 2e-4);
  fs::remove_all(dir);
}

TEST_CASE("bert-base-uncased loads from synthetic weights with the published count", "[hf][full-size]") {
  // Published BertModel count 109,482,240 includes the pooler (768 * 768 + 768), which is
  // not loaded. By hand: embeddings 30522*768 + 512*768 + 2*768 + 2*768 = 23,837,184; per
  // layer 4 * (768*768 + 768) + 2 * (768*3072) + 3072 + 768 + 4 * 768 = 7,087,872; x 12.
  const int64_t embeddings = 30522 * 768 + 512 * 768 + 2 * 768 + 2 * 768;
  const int64_t layer = 4 * (768 * 768 + 768) + 2 * (768 * 3072) + 3072 + 768 + 4 * 768;
  REQUIRE(embeddings + 12 * layer + 768 * 768 + 768 == 109482240);
  TinyBert b{30522, 768, 12, 12, 512, 3072, 2};
  fs::path dir = fresh_dir("bert-base");
  write_text(dir / "config.json", bert_config(b).dump());
  {
    HfTensors t;
    auto zeros = [&](const std::string& n, std::vector<int64_t> s) {
      int64_t k = 1;
      for (auto v : s) k *= v;
      t["bert." + n] = HfTensor{s, std::vector<float>(size_t(k), 0.0f)};
    };
    zeros("embeddings.word_embeddings.weight", {30522, 768});
    zeros("embeddings.position_embeddings.weight", {512, 768});
    zeros("embeddings.token_type_embeddings.weight", {2, 768});
    zeros("embeddings.LayerNorm.weight", {768});
    zeros("embeddings.LayerNorm.bias", {768});
    for (int i = 0; i < 12; ++i) {
      const std::string h = "encoder.layer." + std::to_string(i);
      for (const char* n : {".attention.self.query", ".attention.self.key",
                            ".attention.self.value", ".attention.output.dense"}) {
        zeros(h + n + ".weight", {768, 768});
        zeros(h + n + ".bias", {768});
      }
      zeros(h + ".intermediate.dense.weight", {3072, 768});
      zeros(h + ".intermediate.dense.bias", {3072});
      zeros(h + ".output.dense.weight", {768, 3072});
      zeros(h + ".output.dense.bias", {768});
      for (const char* n : {".attention.output.LayerNorm", ".output.LayerNorm"}) {
        zeros(h + n + ".weight", {768});
        zeros(h + n + ".bias", {768});
      }
    }
    zeros("pooler.dense.weight", {768, 768});
    zeros("pooler.dense.bias", {768});
    write_safetensors_file(dir / "model.safetensors", t, "BF16");
  }
  HfCheckpoint c = read_hf_checkpoint(dir.string(), {.tokenizer = false});
  int64_t n = 0;
  for (const auto& [name, t] : c.params) n += t.numel();
  CHECK(n == embeddings + 12 * layer);
  CHECK(n == 108891648);
  CHECK(c.skipped == std::vector<std::string>{"bert.pooler.dense.bias", "bert.pooler.dense.weight"});
  fs::remove_all(dir);
}

namespace {

// The masked-LM head of HF's BertLMPredictionHead / DistilBertForMaskedLM, naively:
// LN(gelu(h W_t^T + b_t)) E^T + b, E the word embeddings.
Matrix naive_mlm_logits(const Matrix& hidden, const HfTensor& wt, const HfTensor& bt,
                        const HfTensor& ln_w, const HfTensor& ln_b, const HfTensor& embeddings,
                        const HfTensor& bias) {
  Matrix out;
  for (const Vec& h : hidden) {
    Vec t = naive_linear(h, wt, bt);
    for (double& e : t) e = 0.5 * e * (1 + std::erf(e / std::sqrt(2.0)));
    out.push_back(naive_linear(naive_layer_norm(t, ln_w, ln_b), embeddings, bias));
  }
  return out;
}

double worst_logit_gap(const Model& m, const std::vector<int>& ids, const std::vector<int>& types,
                       const Matrix& want) {
  std::vector<TokenInfo> tokens;
  for (size_t i = 0; i < ids.size(); ++i) tokens.push_back({ids[i], kWords[size_t(ids[i])], types[i]});
  RunResult r = m.forward(tokens, {}, {});
  REQUIRE(r.is_logits);
  const size_t V = kWords.size();
  REQUIRE(r.output.shape == Shape{int64_t(ids.size()), int64_t(V)});
  double worst = 0;
  for (size_t p = 0; p < ids.size(); ++p)
    for (size_t v = 0; v < V; ++v)
      worst = std::max(worst, std::abs(double(r.output.data[p * V + v]) - want[p][v]));
  return worst;
}

}  // namespace

TEST_CASE("a BertForMaskedLM head predicts through transform, tied embeddings and bias", "[hf]") {
  TinyBert b;
  const std::vector<int> ids = {2, 5, 4, 7, 3};  // [CLS] the [MASK] sat [SEP]
  const std::vector<int> types(ids.size(), 0);
  const HfTensors plain = bert_tensors(b, "", false, false);
  const HfTensor wt = pattern({b.d, b.d}, 900, 2.0f), bt = pattern({b.d}, 901),
                 lw = pattern({b.d}, 902, 4.0f), lb = pattern({b.d}, 903), bias = pattern({b.vocab}, 904);
  const Matrix want = naive_mlm_logits(naive_bert(plain, b, false, ids, types), wt, bt, lw, lb,
                                  plain.at("embeddings.word_embeddings.weight"), bias);
  fs::path dir = fresh_dir("bert-mlm");
  write_text(dir / "config.json", bert_config(b).dump());
  write_bert_vocab(dir, kWords);
  HfTensors t = bert_tensors(b, "bert.", false, false);
  t["cls.predictions.transform.dense.weight"] = wt;
  t["cls.predictions.transform.dense.bias"] = bt;
  t["cls.predictions.transform.LayerNorm.weight"] = lw;
  t["cls.predictions.transform.LayerNorm.bias"] = lb;
  t["cls.predictions.bias"] = bias;
  t["cls.predictions.decoder.weight"] = t["bert.embeddings.word_embeddings.weight"];  // tied copy
  t["cls.seq_relationship.weight"] = pattern({2, b.d}, 905);  // next-sentence head: not loaded
  t["cls.seq_relationship.bias"] = pattern({2}, 906);
  write_safetensors_file(dir / "model.safetensors", t);
  Model m = load_model(dir.string());
  CHECK(m.config().head.transform);
  CHECK(m.config().head.bias);
  CHECK(m.config().output == OutputHead::Tied);
  CHECK(worst_logit_gap(m, ids, types, want) < 2e-3);
  fs::remove_all(dir);
}

TEST_CASE("a DistilBertForMaskedLM head predicts through vocab_transform and vocab_projector", "[hf]") {
  TinyBert b;
  const std::vector<int> ids = {2, 5, 4, 7, 3};
  const std::vector<int> types(ids.size(), 0);
  const HfTensors plain = bert_tensors(b, "", true, false);
  const HfTensor wt = pattern({b.d, b.d}, 910, 2.0f), bt = pattern({b.d}, 911),
                 lw = pattern({b.d}, 912, 4.0f), lb = pattern({b.d}, 913), bias = pattern({b.vocab}, 914);
  const Matrix want = naive_mlm_logits(naive_bert(plain, b, true, ids, types), wt, bt, lw, lb,
                                  plain.at("embeddings.word_embeddings.weight"), bias);
  fs::path dir = fresh_dir("distilbert-mlm");
  nlohmann::json j = {{"model_type", "distilbert"}, {"vocab_size", b.vocab}, {"dim", b.d},
                      {"n_layers", b.layers}, {"n_heads", b.heads}, {"hidden_dim", b.inner},
                      {"activation", "gelu"}, {"max_position_embeddings", b.positions}};
  write_text(dir / "config.json", j.dump());
  write_bert_vocab(dir, kWords);
  HfTensors t = bert_tensors(b, "distilbert.", true, false);
  t["vocab_transform.weight"] = wt;
  t["vocab_transform.bias"] = bt;
  t["vocab_layer_norm.weight"] = lw;
  t["vocab_layer_norm.bias"] = lb;
  t["vocab_projector.bias"] = bias;
  t["vocab_projector.weight"] = t["distilbert.embeddings.word_embeddings.weight"];
  write_safetensors_file(dir / "model.safetensors", t);
  Model m = load_model(dir.string());
  CHECK(worst_logit_gap(m, ids, types, want) < 2e-3);
  fs::remove_all(dir);
}
