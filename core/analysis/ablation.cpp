// Ablations at inference: LayerDrop (Fan et al. 2019, structured dropout; pruning "every
// other" layer at rate p keeps depths d != 0 mod floor(1/p), REFERENCES.md "Norms and
// regularisers") and DropHead (Zhou et al. 2020: a dropped head's output is zero). Both are
// applied by editing a copy of the model, so the forward pass is the unmodified one, and the
// result is compared with the full model per position:
//   KL(P || Q) = sum_v P(v) (log P(v) - log Q(v)),  P, Q = softmax of full / ablated logits
//   cos(h, h') = h . h' / (|h| |h'|)   for models without an output head.
#include "core/analysis/ablation.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "core/formats/packed_weights.h"
#include "core/model/stack_kind_module.h"
#include "core/tensor/error.h"

namespace atlas {

namespace {

struct Stack {
  std::string name;  // "encoder" / "decoder"
  int64_t first = 0, count = 0;  // global numbering
};

std::vector<Stack> stacks_of(const ModelConfig& c) {
  std::vector<Stack> s;
  // A Universal Transformer applies one shared block ("<stack>.universal.*") at every step.
  if (shared_block_of(c)) return {{c.architecture == Architecture::Encoder ? "encoder" : "decoder", 0, 1}};
  if (c.has_encoder()) s.push_back({"encoder", 0, c.n_layers});
  if (c.has_decoder()) s.push_back({"decoder", c.has_encoder() ? c.n_layers : 0, c.decoder_layers()});
  return s;
}

int64_t total_layers(const ModelConfig& c) {
  int64_t n = 0;
  for (const auto& s : stacks_of(c)) n += s.count;
  return n;
}

// "decoder.layer12.ffn.w1" -> ("decoder", 12, ".ffn.w1"); false for non-layer tensors.
bool split_layer_name(const std::string& name, std::string& stack, int64_t& layer, std::string& rest) {
  const size_t shared = name.find(".universal.");
  if (shared != std::string::npos) {  // the shared block of a Universal Transformer: layer 0
    stack = name.substr(0, shared);
    layer = 0;
    rest = name.substr(shared + 10);
    return true;
  }
  const size_t dot = name.find(".layer");
  if (dot == std::string::npos) return false;
  size_t i = dot + 6, j = i;
  while (j < name.size() && std::isdigit(static_cast<unsigned char>(name[j]))) ++j;
  if (j == i || j >= name.size() || name[j] != '.') return false;
  stack = name.substr(0, dot);
  layer = std::stoll(name.substr(i, j - i));
  rest = name.substr(j);
  return true;
}

std::vector<double> softmax(const float* row, int64_t n) {
  std::vector<double> p(static_cast<size_t>(n));
  const float mx = *std::max_element(row, row + n);
  double z = 0;
  for (int64_t v = 0; v < n; ++v) z += p[size_t(v)] = std::exp(double(row[v]) - mx);
  for (double& x : p) x /= z;
  return p;
}

}  // namespace

int64_t ablation_layer_count(const ModelConfig& c) { return total_layers(c); }

int64_t global_layer_of(const ModelConfig& c, const std::string& name) {
  std::string stack, rest;
  int64_t layer = 0;
  if (!split_layer_name(name + ".", stack, layer, rest)) return -1;
  for (const auto& s : stacks_of(c))
    if (s.name == stack) return layer < s.count ? s.first + layer : -1;
  return -1;
}

std::vector<int64_t> layerdrop_every_other(int64_t n_layers, double rate) {
  if (!(rate > 0.0) || rate > 1.0)
    throw AtlasError("LayerDrop rate must be in (0, 1], got " + std::to_string(rate));
  const int64_t every = static_cast<int64_t>(std::floor(1.0 / rate));
  std::vector<int64_t> out;
  for (int64_t d = 1; d <= n_layers; ++d)
    if (d % every == 0) out.push_back(d - 1);
  return out;
}

std::vector<int64_t> ablated_layers(const ModelConfig& c, const AblationSpec& spec) {
  const int64_t n = total_layers(c);
  std::set<int64_t> drop;
  for (int64_t l : spec.drop_layers) {
    if (l < 0 || l >= n)
      throw AtlasError("--drop-layers: layer " + std::to_string(l) + " does not exist; the model has " +
                       std::to_string(n) + " layers (0.." + std::to_string(n - 1) + ")");
    drop.insert(l);
  }
  if (spec.layerdrop_rate > 0 || spec.layerdrop_rate < 0)
    for (const auto& s : stacks_of(c))
      for (int64_t l : layerdrop_every_other(s.count, spec.layerdrop_rate)) drop.insert(s.first + l);
  for (const auto& s : stacks_of(c)) {
    int64_t dropped = 0;
    for (int64_t l : drop) dropped += l >= s.first && l < s.first + s.count;
    if (dropped == s.count)
      throw AtlasError("the ablation would drop every layer of the " + s.name + " (" +
                       std::to_string(s.count) + " layers); keep at least one");
  }
  return {drop.begin(), drop.end()};
}

Model ablated_model(const Model& model, const AblationSpec& spec) {
  const ModelConfig& c = model.config();
  const std::vector<int64_t> dropped = ablated_layers(c, spec);
  const std::set<int64_t> drop(dropped.begin(), dropped.end());
  for (const auto& [l, h] : spec.drop_heads) {
    if (l < 0 || l >= total_layers(c))
      throw AtlasError("--drop-heads: layer " + std::to_string(l) + " does not exist; the model has " +
                       std::to_string(total_layers(c)) + " layers (0.." + std::to_string(total_layers(c) - 1) + ")");
    if (h < 0 || h >= c.n_heads)
      throw AtlasError("--drop-heads: head " + std::to_string(h) + " does not exist; layers have " +
                       std::to_string(c.n_heads) + " heads (0.." + std::to_string(c.n_heads - 1) + ")");
  }
  // Old local index -> new local index per stack.
  std::map<std::string, std::map<int64_t, int64_t>> renumber;
  ModelConfig nc = c;
  for (const auto& s : stacks_of(c)) {
    int64_t next = 0;
    for (int64_t l = 0; l < s.count; ++l)
      if (!drop.count(s.first + l)) renumber[s.name][l] = next++;
    if (s.name == "encoder") nc.n_layers = next;
    else if (c.architecture == Architecture::Decoder) nc.n_layers = next;
    else nc.n_decoder_layers = next;
  }
  ParamStore p = model.params();
  // Zero the dropped heads' input columns of W^O in every attention sub-layer of the layer.
  const int64_t dh = c.d_head(), d = c.d_model;
  for (const auto& [l, h] : spec.drop_heads)
    for (const auto& s : stacks_of(c)) {
      if (l < s.first || l >= s.first + s.count) continue;
      const std::string pre = shared_block_of(c) ? s.name + "." + shared_block_of(c)
                                                 : s.name + ".layer" + std::to_string(l - s.first);
      for (const char* attn : {".attn.wo", ".self_attn.wo", ".cross_attn.wo"}) {
        auto it = p.find(pre + attn);
        if (it == p.end()) continue;
        if (it->second.packed) it->second = to_float(it->second);  // this one matrix, edited
        const int64_t width = it->second.shape[1];  // n_heads * d_head
        for (int64_t o = 0; o < d; ++o)
          for (int64_t col = h * dh; col < (h + 1) * dh; ++col) it->second.data[size_t(o * width + col)] = 0.0f;
      }
    }
  if (shared_block_of(c)) return Model(c, std::move(p));  // one shared block: nothing renumbered
  ParamStore out;
  for (auto& [name, t] : p) {
    std::string stack, rest;
    int64_t layer;
    if (!split_layer_name(name, stack, layer, rest) || !renumber.count(stack)) {
      out.emplace(name, std::move(t));
      continue;
    }
    auto it = renumber[stack].find(layer);
    if (it == renumber[stack].end()) continue;  // a dropped layer's tensor
    out.emplace(stack + ".layer" + std::to_string(it->second) + rest, std::move(t));
  }
  return Model(nc, std::move(out));
}

std::vector<double> compare_ablation(const Model& model, RunResult& full, const AblationSpec& spec,
                                     const RunOptions& options) {
  Model pruned = ablated_model(model, spec);
  RunOptions o = options;
  o.trace = TraceOptions::none();
  RunResult r = pruned.forward(full.trace.source_tokens, full.trace.target_tokens, o);
  const Tensor& a = full.output;
  const Tensor& b = r.output;
  if (a.shape != b.shape) throw AtlasError("internal: ablated output shape differs from the full model's");
  const int64_t L = a.shape[0], n = a.shape[1];
  std::vector<double> per(static_cast<size_t>(L));
  Tensor t({L});
  for (int64_t i = 0; i < L; ++i) {
    const float* x = a.data.data() + i * n;
    const float* y = b.data.data() + i * n;
    double v = 0;
    if (full.is_logits) {
      std::vector<double> P = softmax(x, n), Q = softmax(y, n);
      for (int64_t k = 0; k < n; ++k)
        if (P[size_t(k)] > 0) v += P[size_t(k)] * (std::log(P[size_t(k)]) - std::log(std::max(Q[size_t(k)], 1e-300)));
    } else {
      double xy = 0, xx = 0, yy = 0;
      for (int64_t k = 0; k < n; ++k) {
        xy += double(x[k]) * y[k];
        xx += double(x[k]) * x[k];
        yy += double(y[k]) * y[k];
      }
      v = xy / std::max(std::sqrt(xx * yy), 1e-30);
    }
    per[size_t(i)] = v;
    t.data[size_t(i)] = float(v);
  }
  if (full.is_logits)
    full.trace.add(ablation_arrays::kKl, "KL(full || ablated) of the next-token distributions per position [L]", std::move(t));
  else
    full.trace.add(ablation_arrays::kCosine, "cosine of full and ablated final hidden states per position [L]", std::move(t));
  const std::vector<int64_t> layers = ablated_layers(model.config(), spec);
  if (!layers.empty()) {
    Tensor lt({int64_t(layers.size())});
    for (size_t i = 0; i < layers.size(); ++i) lt.data[i] = float(layers[i]);
    full.trace.add(ablation_arrays::kLayers, "dropped layers, numbered over all stacks [n]", std::move(lt), DType::I32);
  }
  if (!spec.drop_heads.empty()) {
    Tensor ht({int64_t(spec.drop_heads.size()), 2});
    for (size_t i = 0; i < spec.drop_heads.size(); ++i) {
      ht.data[2 * i] = float(spec.drop_heads[i].first);
      ht.data[2 * i + 1] = float(spec.drop_heads[i].second);
    }
    full.trace.add(ablation_arrays::kHeads, "dropped (layer, head) pairs [n, 2]", std::move(ht), DType::I32);
  }
  return per;
}

}  // namespace atlas

namespace atlas {

namespace {

int64_t parse_index(const std::string& s, const std::string& flag, const std::string& whole) {
  if (s.empty() || !std::all_of(s.begin(), s.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
    throw AtlasError(flag + ": expected a non-negative integer, got \"" + s + "\" in \"" + whole + "\"");
  // A number beyond any layer or head is kept as the largest 64-bit value: the range check
  // against the model then refuses it, naming the valid range.
  return s.size() > 18 ? std::numeric_limits<int64_t>::max() : std::stoll(s);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t p = s.find(sep, start);
    out.push_back(s.substr(start, p == std::string::npos ? std::string::npos : p - start));
    if (p == std::string::npos) break;
    start = p + 1;
  }
  return out;
}

}  // namespace

std::vector<int64_t> parse_layer_list(const std::string& text, const std::string& flag) {
  std::vector<int64_t> out;
  for (const auto& item : split(text, ',')) out.push_back(parse_index(item, flag, text));
  return out;
}

std::vector<std::pair<int64_t, int64_t>> parse_head_list(const std::string& text, const std::string& flag) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const auto& item : split(text, ',')) {
    auto parts = split(item, ':');
    if (parts.size() != 2)
      throw AtlasError(flag + ": expected LAYER:HEAD pairs like 0:1,2:3, got \"" + item + "\"");
    out.emplace_back(parse_index(parts[0], flag, text), parse_index(parts[1], flag, text));
  }
  return out;
}

}  // namespace atlas
