// Path patching (path_patching.h) over the engine's activation hooks: hooks.heads freezes or
// sets the heads' outputs before W^O, hooks.qkv records or sets the receivers' inputs (per query
// head, after RoPE and the grouped-query repeat). Each sub-layer's calls are matched to the
// recorded run's by order, as activation patching does.
#include "core/analysis/path_patching.h"

#include <array>
#include <cctype>
#include <limits>
#include <map>

#include "core/analysis/ablation.h"
#include "core/analysis/choice_and_softmax.h"
#include "core/tensor/error.h"

namespace atlas {

namespace {

using HeadCalls = std::map<std::string, std::vector<Tensor>>;  // sub-layer prefix -> one tensor per call

struct PathRecorded {
  HeadCalls heads;  // every head's output before W^O
  Tensor logits;
};

PathRecorded path_record_run(const Model& model, const std::vector<TokenInfo>& tokens, const RunOptions& base) {
  PathRecorded r;
  RunOptions o = base;
  o.hooks.heads = [&r](const std::string& prefix, Tensor& h) { r.heads[prefix].push_back(h); };
  r.logits = model.forward(tokens, {}, o).output;
  return r;
}

const Tensor& path_call(const HeadCalls& calls, const std::string& prefix, size_t call, const Tensor& like) {
  const auto it = calls.find(prefix);
  if (it == calls.end() || call >= it->second.size() || it->second[call].shape != like.shape)
    throw AtlasError("path patching: the runs called " + prefix +
                     " a different number of times or with different shapes; path patching needs runs of "
                     "the same structure");
  return it->second[call];
}

void path_set_head(Tensor& t, const Tensor& from, int64_t h, int64_t H) {
  const int64_t w = t.shape[1] / H;
  t.mat().middleCols(h * w, w) = from.mat().middleCols(h * w, w);
}

}  // namespace

const char* receiver_input_name(ReceiverInput r) {
  return r == ReceiverInput::Q ? "q" : r == ReceiverInput::K ? "k" : "v";
}
ReceiverInput parse_receiver_input(const std::string& s, const std::string& flag) {
  return parse_named_choice<ReceiverInput>(s, flag,
                                           {{"q", ReceiverInput::Q}, {"k", ReceiverInput::K}, {"v", ReceiverInput::V}});
}

std::vector<HeadRef> parse_receivers(const std::string& s, const std::string& flag) {
  if (s == "all") return {};
  std::vector<HeadRef> out;
  size_t start = 0;
  while (true) {
    const size_t end = s.find(',', start);
    const std::string item = s.substr(start, end == std::string::npos ? std::string::npos : end - start);
    const size_t dot = item.find('.');
    auto digits = [](const std::string& t) {
      if (t.empty() || t.size() > 6) return false;
      for (char ch : t)
        if (!std::isdigit(static_cast<unsigned char>(ch))) return false;
      return true;
    };
    if (dot == std::string::npos || !digits(item.substr(0, dot)) || !digits(item.substr(dot + 1)))
      throw AtlasError(flag + ": \"" + item + "\" is not a head as layer.head (e.g. 3.7); give L.H[,L.H...] or all");
    out.push_back({std::stoll(item.substr(0, dot)), std::stoll(item.substr(dot + 1))});
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

void check_path_patching(const Model& model, const std::vector<TokenInfo>& clean,
                         const std::vector<TokenInfo>& corrupted, const PathPatchSpec& spec) {
  PatchSpec p = spec.patch;
  p.site = spec.input == ReceiverInput::Q ? PatchSite::Q : spec.input == ReceiverInput::K ? PatchSite::K : PatchSite::V;
  check_patching(model, clean, corrupted, p);
  const ModelConfig& c = model.config();
  const int64_t layers = ablation_layer_count(c);
  for (const HeadRef& r : spec.receivers) {
    const std::string name = std::to_string(r.layer) + "." + std::to_string(r.head);
    if (r.layer < 0 || r.layer >= layers)
      throw AtlasError("receiver " + name + " is outside the model's " + std::to_string(layers) + " layers (0.." +
                       std::to_string(layers - 1) + ")");
    if (r.head < 0 || r.head >= c.n_heads)
      throw AtlasError("receiver " + name + " is outside the model's " + std::to_string(c.n_heads) +
                       " heads per layer (0.." + std::to_string(c.n_heads - 1) + ")");
  }
}

PathPatchResult path_patching(const Model& model, const std::vector<TokenInfo>& clean,
                              const std::vector<TokenInfo>& corrupted, const PathPatchSpec& spec,
                              const RunOptions& options, const std::function<void(int64_t, int64_t)>& progress) {
  check_path_patching(model, clean, corrupted, spec);
  const ModelConfig& c = model.config();
  const int64_t L = int64_t(clean.size()), layers = ablation_layer_count(c), H = c.n_heads;
  const bool grid = spec.receivers.empty();  // every head a receiver of its own
  PathPatchResult r;
  r.spec = spec;
  r.position = spec.patch.position < 0 ? L - 1 : spec.patch.position;
  r.shape = grid ? std::vector<int64_t>{layers, H, layers, H} : std::vector<int64_t>{layers, H};
  const int64_t senders = layers * H, per_sender = grid ? layers * H : 1;

  // Which cells run: a sender reaches a receiver only from an earlier layer.
  auto reaches = [&](int64_t sender_layer, int64_t receiver_cell) {
    if (spec.run_every_cell) return true;
    if (grid) return receiver_cell / H > sender_layer;
    for (const HeadRef& h : spec.receivers)
      if (h.layer > sender_layer) return true;
    return false;
  };
  int64_t total = 2;
  for (int64_t s = 0; s < senders; ++s) {
    int64_t d = 0;
    for (int64_t k = 0; k < per_sender; ++k) d += reaches(s / H, k);
    total += d + (d > 0);
  }

  RunOptions base = options;
  base.trace = TraceOptions::none();
  base.prefix_cache = nullptr;
  base.progress = nullptr;
  base.hooks = {};
  const bool denoise = spec.patch.direction == PatchDirection::Denoise;
  const std::vector<TokenInfo>& target_tokens = denoise ? corrupted : clean;
  int64_t done = 0;
  auto tick = [&] {
    ++done;
    if (progress) progress(done, total);
  };
  const PathRecorded clean_run = path_record_run(model, clean, base);
  tick();
  const PathRecorded corrupted_run = path_record_run(model, corrupted, base);
  tick();
  const PathRecorded& target = denoise ? corrupted_run : clean_run;
  const PathRecorded& source = denoise ? clean_run : corrupted_run;
  r.clean = patch_metric(spec.patch, clean_run.logits, clean_run.logits);
  r.corrupted = patch_metric(spec.patch, clean_run.logits, corrupted_run.logits);
  const double unpatched = denoise ? r.corrupted : r.clean;
  r.raw.assign(size_t(senders * per_sender), unpatched);
  const size_t which = spec.input == ReceiverInput::Q ? 0 : spec.input == ReceiverInput::K ? 1 : 2;

  for (int64_t s = 0; s < senders; ++s) {
    const int64_t ls = s / H, hs = s % H;
    bool any = false;
    for (int64_t k = 0; k < per_sender && !any; ++k) any = reaches(ls, k);
    if (!any) continue;
    if (options.cancel && options.cancel->load()) throw Cancelled();
    // Run C: the sender's output from the source, every other head's frozen at the target's.
    HeadCalls received;  // the chosen input of every sub-layer call in run C
    {
      RunOptions o = base;
      std::map<std::string, size_t> calls;
      o.hooks.heads = [&](const std::string& prefix, Tensor& t) {
        const size_t call = calls[prefix]++;
        t = path_call(target.heads, prefix, call, t);
        if (global_layer_of(c, prefix) == ls) path_set_head(t, path_call(source.heads, prefix, call, t), hs, H);
      };
      o.hooks.qkv = [&](const std::string& prefix, Tensor& q, Tensor& k, Tensor& v) {
        received[prefix].push_back(which == 0 ? q : which == 1 ? k : v);
      };
      model.forward(target_tokens, {}, o);
      ++r.runs;
      tick();
    }
    // Runs D: the target with the receivers' input from run C.
    for (int64_t k = 0; k < per_sender; ++k) {
      if (!reaches(ls, k)) continue;
      if (options.cancel && options.cancel->load()) throw Cancelled();
      const std::vector<HeadRef> receivers = grid ? std::vector<HeadRef>{{k / H, k % H}} : spec.receivers;
      RunOptions o = base;
      std::map<std::string, size_t> calls;
      o.hooks.qkv = [&](const std::string& prefix, Tensor& q, Tensor& kk, Tensor& v) {
        const size_t call = calls[prefix]++;
        const int64_t l = global_layer_of(c, prefix);
        Tensor& t = which == 0 ? q : which == 1 ? kk : v;
        for (const HeadRef& h : receivers)
          if (h.layer == l) path_set_head(t, path_call(received, prefix, call, t), h.head, H);
      };
      const Tensor logits = model.forward(target_tokens, {}, o).output;
      r.raw[size_t(s * per_sender + k)] = patch_metric(spec.patch, clean_run.logits, logits);
      ++r.runs;
      tick();
    }
  }
  const double span = r.clean - r.corrupted;
  r.normalised.resize(r.raw.size());
  for (size_t i = 0; i < r.raw.size(); ++i)
    r.normalised[i] = span != 0 ? (r.raw[i] - r.corrupted) / span + 0.0 : std::numeric_limits<double>::quiet_NaN();
  return r;
}

}  // namespace atlas
