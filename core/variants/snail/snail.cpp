// SNAIL (equations in snail.h).
#include "core/variants/snail/snail.h"

#include <cmath>

#include "core/tensor/error.h"
#include "core/tensor/random.h"
#include "core/variants/snail/snail_arrays.h"
#include "core/tensor/sigmoid.h"

namespace atlas {

namespace {

Mat seeded(uint64_t seed, const std::string& name, int64_t rows, int64_t cols) {
  Rng rng(seed ^ hash_name(name));
  const double std = std::sqrt(2.0 / double(rows + cols));  // Glorot normal, as params.cpp
  Mat m(rows, cols);
  for (int64_t i = 0; i < m.size(); ++i) m.data()[i] = static_cast<float>(rng.normal() * std);
  return m;
}

Tensor tensor_of(const Mat& m, Shape shape) {
  Tensor t(std::move(shape));
  std::copy(m.data(), m.data() + m.size(), t.data.begin());
  return t;
}

}  // namespace

std::vector<int64_t> snail_dilations(int64_t length, bool paper_dilations) {
  int64_t n = 0;
  while ((int64_t(1) << n) < length) ++n;  // ceil(log2 T)
  n = std::max<int64_t>(1, n);
  std::vector<int64_t> d;
  for (int64_t i = 0; i < n; ++i) d.push_back(int64_t(1) << (paper_dilations ? i + 1 : i));
  return d;
}

Mat snail_dense_block(const Mat& x, int64_t dilation, const Mat& w_f, const RowVec& b_f, const Mat& w_g,
                      const RowVec& b_g) {
  const int64_t L = x.rows(), c = x.cols(), D = w_f.rows();
  Mat out(L, c + D);
  out.leftCols(c) = x;
  for (int64_t t = 0; t < L; ++t) {
    RowVec f = x.row(t) * w_f.leftCols(c).transpose() + b_f;
    RowVec g = x.row(t) * w_g.leftCols(c).transpose() + b_g;
    if (t - dilation >= 0) {  // causal: the past tap is zero before the sequence starts
      f += x.row(t - dilation) * w_f.rightCols(c).transpose();
      g += x.row(t - dilation) * w_g.rightCols(c).transpose();
    }
    for (int64_t k = 0; k < D; ++k) out(t, c + k) = std::tanh(f[k]) * sigmoid(g[k]);
  }
  return out;
}

Mat snail_attention_block(const Mat& x, const Mat& w_q, const Mat& w_k, const Mat& w_v, Mat* probs) {
  const int64_t L = x.rows(), c = x.cols(), K = w_q.rows();
  const Mat q = x * w_q.transpose(), k = x * w_k.transpose(), v = x * w_v.transpose();
  Mat p = Mat::Zero(L, L);
  for (int64_t i = 0; i < L; ++i) {
    float mx = -INFINITY;
    for (int64_t j = 0; j <= i; ++j) mx = std::max(mx, p(i, j) = q.row(i).dot(k.row(j)) / std::sqrt(float(K)));
    float z = 0;
    for (int64_t j = 0; j <= i; ++j) z += p(i, j) = std::exp(p(i, j) - mx);
    for (int64_t j = 0; j <= i; ++j) p(i, j) /= z;
  }
  Mat out(L, c + v.cols());
  out.leftCols(c) = x;
  out.rightCols(v.cols()) = p * v;
  if (probs) *probs = std::move(p);
  return out;
}

Mat snail_receptive_field(int64_t length, const std::vector<int64_t>& dilations) {
  std::vector<uint8_t> reach(size_t(length), 0);  // offsets i - j that some path covers
  reach[0] = 1;
  for (int64_t d : dilations)
    for (int64_t o = length - 1; o >= d; --o) reach[size_t(o)] |= reach[size_t(o - d)];
  Mat rf = Mat::Zero(length, length);
  for (int64_t i = 0; i < length; ++i)
    for (int64_t j = 0; j <= i; ++j) rf(i, j) = reach[size_t(i - j)];
  return rf;
}

Mat snail_byte_embeddings(const SnailSpec& s, const std::string& text) {
  const int64_t L = static_cast<int64_t>(text.size());
  Mat x(L, s.d_input);
  for (int64_t t = 0; t < L; ++t) {
    const auto byte = static_cast<uint64_t>(static_cast<unsigned char>(text[size_t(t)]));
    Rng rng(s.seed ^ hash_name("snail.embed") ^ (byte * 0x9E3779B97F4A7C15ull));
    for (int64_t k = 0; k < s.d_input; ++k) x(t, k) = static_cast<float>(rng.normal());
  }
  return x;
}

std::vector<TokenInfo> snail_byte_tokens(const std::string& text) {
  std::vector<TokenInfo> out;
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    out.push_back({int32_t(c), c >= 32 && c < 127 ? std::string(1, char(c)) : "<" + std::to_string(c) + ">"});
  }
  return out;
}

int64_t snail_visit_weights(const SnailSpec& s,
                            const std::function<void(const std::string&, int64_t, int64_t)>& visit) {
  const std::vector<int64_t> dilations = snail_dilations(s.length, s.paper_dilations);
  int64_t c = s.d_input;
  for (int64_t b = 0; b <= s.tc_blocks; ++b) {
    const std::string a = snail_arrays::attention(b);  // its traced map and its weights' prefix
    visit(a + ".wq", s.key_size, c);
    visit(a + ".wk", s.key_size, c);
    visit(a + ".wv", s.value_size, c);
    c += s.value_size;
    if (b == s.tc_blocks) break;
    for (size_t k = 0; k < dilations.size(); ++k) {
      const std::string n = "snail.tc" + std::to_string(b) + ".dense" + std::to_string(k);
      visit(n + ".wf", s.filters, 2 * c);
      visit(n + ".bf", 1, s.filters);
      visit(n + ".wg", s.filters, 2 * c);
      visit(n + ".bg", 1, s.filters);
      c += s.filters;
    }
  }
  return c;
}

Mat snail_forward(const SnailSpec& s, const Mat& x_in, Trace* trace, const SnailWeights& given) {
  if (x_in.cols() != s.d_input)
    throw AtlasError("SNAIL input has " + std::to_string(x_in.cols()) + " channels, the network expects " +
                     std::to_string(s.d_input));
  if (x_in.rows() < 1) throw AtlasError("SNAIL input is empty");
  const int64_t L = x_in.rows();
  if (s.length > 0 && L > s.length)
    throw AtlasError("input has " + std::to_string(L) + " steps; this SNAIL's TC blocks are built for "
                     "sequences of at most T = " + std::to_string(s.length));
  const SnailWeights weights = given ? given : SnailWeights([&s](const std::string& name, int64_t rows, int64_t cols) {
    // Seeded matrices and zero biases (atlas snail, the app's explorer).
    const bool bias = name.ends_with(".bf") || name.ends_with(".bg");
    return bias ? Mat(Mat::Zero(rows, cols)) : seeded(s.seed, name, rows, cols);
  });
  const std::vector<int64_t> dilations = snail_dilations(s.length > 0 ? s.length : L, s.paper_dilations);
  std::vector<int64_t> all_dilations;
  Mat x = x_in;
  for (int64_t b = 0; b <= s.tc_blocks; ++b) {
    const std::string a = snail_arrays::attention(b);  // its traced map and its weights' prefix
    const int64_t c = x.cols();
    Mat probs;
    x = snail_attention_block(x, weights(a + ".wq", s.key_size, c), weights(a + ".wk", s.key_size, c),
                              weights(a + ".wv", s.value_size, c), &probs);
    if (trace) {
      const std::string traced = s.view_names ? "decoder.layer" + std::to_string(b) + ".self_attn" : a;
      trace->add(traced, "causal attention of SNAIL attention block " + std::to_string(b) + " [1, L, L]",
                 tensor_of(probs, {1, L, L}));
      if (s.view_names) {  // as a model: the input text's tokens (a bare block has none)
        AttentionMap m;
        m.array = traced;
        m.stack = "decoder";
        m.sublayer = "self_attn";
        m.layer = b;
        m.queries = m.keys = {TokenSide::Source, 0, L};
        trace->describe_attention(std::move(m));
      }
    }
    if (b == s.tc_blocks) break;
    for (size_t k = 0; k < dilations.size(); ++k) {
      const std::string n = "snail.tc" + std::to_string(b) + ".dense" + std::to_string(k);
      const int64_t cin = x.cols();
      const Mat bf = weights(n + ".bf", 1, s.filters), bg = weights(n + ".bg", 1, s.filters);
      x = snail_dense_block(x, dilations[k], weights(n + ".wf", s.filters, 2 * cin), bf.row(0),
                            weights(n + ".wg", s.filters, 2 * cin), bg.row(0));
      all_dilations.push_back(dilations[k]);
    }
  }
  if (trace) {
    trace->add(snail_arrays::kReceptiveField,
               "1 where input j reaches output i through the causal convolutions (not attention) [L, L]",
               tensor_of(snail_receptive_field(L, all_dilations), {L, L}));
    trace->add(snail_arrays::kOutput, "final features [L, channels]", tensor_of(x, {L, x.cols()}));
  }
  return x;
}

}  // namespace atlas
