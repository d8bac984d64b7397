#include "app/python/py_analyses.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "app/python/py_interrupt.h"
#include "core/analysis/ablation_sweep.h"
#include "core/analysis/attribution_patching.h"
#include "core/analysis/head_statistics.h"
#include "core/analysis/logit_attribution.h"
#include "core/analysis/patching.h"
#include "core/analysis/path_patching.h"
#include "core/analysis/qk_decomposition.h"
#include "core/tensor/error.h"

namespace atlas::python {

namespace {

py::array_t<double> doubles(const std::vector<double>& v, std::vector<int64_t> shape) {
  py::array_t<double> a(std::vector<py::ssize_t>(shape.begin(), shape.end()));
  if (size_t(a.size()) != v.size()) throw AtlasError("internal: an analysis result does not fill its shape");
  std::copy(v.begin(), v.end(), a.mutable_data());
  return a;
}

py::array_t<int64_t> int64s(const std::vector<int64_t>& v) {
  py::array_t<int64_t> a(py::ssize_t(v.size()));
  std::copy(v.begin(), v.end(), a.mutable_data());
  return a;
}

// One vocabulary id from Python: an int (checked against the vocabulary by the analysis) or a
// str that must be one token ("#ID" is the id, as on the command line).
int32_t token_arg(const Model& model, const py::handle& t, const std::string& what) {
  if (py::isinstance<py::str>(t)) return single_token_id(model, py::cast<std::string>(t), what);
  if (PyFloat_Check(t.ptr()) || !PyIndex_Check(t.ptr()))
    throw py::type_error(what + ": a token is a str (one token's text) or an int id");
  const int64_t id = py::cast<int64_t>(t);
  if (id < 0 || id >= model.config().vocab_size)
    throw AtlasError(what + ": token id " + std::to_string(id) + " is outside the vocabulary of " +
                     std::to_string(model.config().vocab_size));
  return int32_t(id);
}

// None, one token, or a sequence of tokens, as ids.
std::vector<int32_t> token_args(const Model& model, const py::object& tokens, const std::string& what) {
  std::vector<int32_t> out;
  if (tokens.is_none()) return out;
  if (py::isinstance<py::str>(tokens) || PyIndex_Check(tokens.ptr())) return {token_arg(model, tokens, what)};
  if (!py::isinstance<py::sequence>(tokens)) throw py::type_error(what + ": a token or a sequence of tokens");
  for (const py::handle t : tokens) out.push_back(token_arg(model, t, what));
  return out;
}

// Runs `work` with the GIL released and Ctrl-C turned into the engine's cancel flag;
// `options.cancel` is set to the interrupt's flag and `progress` checks it.
template <class F>
auto with_interrupt(RunOptions& options, F work) {
  Interrupt interrupt;
  options.cancel = &interrupt.cancel;
  const auto progress = [&](int64_t, int64_t) { interrupt.check(); };
  try {
    py::gil_scoped_release release;
    return work(options, progress);
  } catch (const Cancelled&) {
    if (interrupt.error) throw *interrupt.error;
    throw;
  }
}

// The spec patch and attribute share: the site (not "path"), metric, direction, tokens checked
// against what the metric needs, position.
PatchSpec patch_spec(const Model& model, const std::string& site, const std::string& metric,
                     const std::string& direction, const py::object& tokens, int64_t position) {
  PatchSpec spec;
  if (site != "path") spec.site = parse_patch_site(site, "site");
  spec.metric = parse_patch_metric(metric, "metric");
  spec.direction = parse_patch_direction(direction, "direction");
  const std::vector<int32_t> ids = token_args(model, tokens, "tokens");
  const size_t want = spec.metric == PatchMetric::LogitDiff ? 2 : spec.metric == PatchMetric::KL ? 0 : 1;
  if (ids.size() != want)
    throw AtlasError(std::string("metric \"") + metric + "\" needs " +
                     (want == 2 ? "tokens=(A, B)" : want == 1 ? "tokens=A (one token)" : "no tokens") + ", got " +
                     std::to_string(ids.size()));
  if (ids.size() > 0) spec.token_a = ids[0];
  if (ids.size() > 1) spec.token_b = ids[1];
  spec.position = position;
  return spec;
}

py::dict grid_dict(const std::vector<double>& normalised, const std::vector<double>& raw,
                   const std::vector<int64_t>& shape, double clean, double corrupted, int64_t position, int64_t runs,
                   const PatchSpec& spec, const std::string& site) {
  py::dict out;
  out["grid"] = doubles(normalised, shape);
  out["raw"] = doubles(raw, shape);
  out["clean"] = clean;
  out["corrupted"] = corrupted;
  out["position"] = position;
  out["runs"] = runs;
  out["site"] = site;
  out["direction"] = patch_direction_name(spec.direction);
  out["metric"] = patch_metric_name(spec.metric);
  return out;
}

// receivers=None/"all" (every head its own receiver), "L.H,L.H", or a sequence of (layer, head).
std::vector<HeadRef> receivers_arg(const py::object& receivers) {
  if (receivers.is_none()) return {};
  if (py::isinstance<py::str>(receivers)) return parse_receivers(py::cast<std::string>(receivers), "receivers");
  std::vector<HeadRef> out;
  for (const py::handle r : receivers) {
    const auto pair = py::cast<std::pair<int64_t, int64_t>>(r);
    out.push_back({pair.first, pair.second});
  }
  if (out.empty()) throw AtlasError("receivers: give heads as [(layer, head), ...], \"L.H,L.H\" or \"all\"");
  return out;
}

// An encoder-decoder model's decoder input, as atlas patch --target takes it: a text (tokenized
// as run() does, BOS first) or token ids.
std::vector<TokenInfo> decoder_tokens(const PyModel& m, const py::object& target, const char* what) {
  return py::isinstance<py::str>(target) ? m.model().tokenize("", py::cast<std::string>(target)).second
                                         : m.tokens_of(target, what);
}

py::dict patch(const PyModel& m, const py::object& clean_in, const py::object& corrupted_in, const std::string& site,
               const std::string& metric, const std::string& direction, const py::object& tokens, int64_t position,
               const py::object& receivers, const std::string& receiver_input, const py::object& target,
               const py::object& corrupted_target) {
  const Model& model = m.model();
  const PatchSpec spec = patch_spec(model, site, metric, direction, tokens, position);
  const std::vector<TokenInfo> clean = m.tokens_of(clean_in, "clean");
  const std::vector<TokenInfo> corrupted = m.tokens_of(corrupted_in, "corrupted");
  RunOptions options = m.analysis_options();
  const bool enc_dec = model.config().architecture == Architecture::EncoderDecoder;
  if (!enc_dec && !(target.is_none() && corrupted_target.is_none()))
    throw AtlasError("target and corrupted_target are an encoder-decoder model's decoder inputs; this model is not one");
  if (enc_dec && site != "path") {  // the decoder inputs of both runs (corrupted_target: target's by default)
    if (target.is_none())
      throw AtlasError("an encoder-decoder model is patched with its decoder input: give target= (and "
                       "corrupted_target= when the corrupted run's differs)");
    const PatchingInput clean_run{clean, decoder_tokens(m, target, "target")};
    const PatchingInput corrupted_run{
        corrupted, decoder_tokens(m, corrupted_target.is_none() ? target : corrupted_target, "corrupted_target")};
    check_patching(model, clean_run, corrupted_run, spec);
    const PatchResult r = with_interrupt(options, [&](const RunOptions& o, const auto& progress) {
      return activation_patching(model, clean_run, corrupted_run, spec, o, progress);
    });
    py::dict out = grid_dict(r.normalised, r.raw, r.shape, r.clean, r.corrupted, r.position, r.runs, spec,
                             patch_site_name(spec.site));
    out["row_names"] = r.row_names;  // encoder rows, then each decoder layer's self- and cross-attention
    return out;
  }
  if (site == "path") {
    PathPatchSpec path;
    path.patch = spec;
    path.receivers = receivers_arg(receivers);
    path.input = parse_receiver_input(receiver_input, "receiver_input");
    check_path_patching(model, clean, corrupted, path);
    const PathPatchResult r = with_interrupt(options, [&](const RunOptions& o, const auto& progress) {
      return path_patching(model, clean, corrupted, path, o, progress);
    });
    return grid_dict(r.normalised, r.raw, r.shape, r.clean, r.corrupted, r.position, r.runs, spec, "path");
  }
  if (!receivers.is_none()) throw AtlasError("receivers are for site=\"path\" (path patching)");
  check_patching(model, clean, corrupted, spec);
  const PatchResult r = with_interrupt(options, [&](const RunOptions& o, const auto& progress) {
    return activation_patching(model, clean, corrupted, spec, o, progress);
  });
  py::dict out = grid_dict(r.normalised, r.raw, r.shape, r.clean, r.corrupted, r.position, r.runs, spec,
                           patch_site_name(spec.site));
  out["row_names"] = r.row_names;  // per grid row: its attention sub-layer (head sites) or layer
  return out;
}

py::dict attribute(const PyModel& m, const py::object& clean_in, const py::object& corrupted_in,
                   const std::string& site, const std::string& metric, const std::string& direction,
                   const py::object& tokens, int64_t position, int64_t ig_steps) {
  const Model& model = m.model();
  if (site == "path") throw AtlasError("attribution patching has no path site; path patching is patch(site=\"path\")");
  const PatchSpec spec = patch_spec(model, site, metric, direction, tokens, position);
  const std::vector<TokenInfo> clean = m.tokens_of(clean_in, "clean");
  const std::vector<TokenInfo> corrupted = m.tokens_of(corrupted_in, "corrupted");
  AttributionOptions a;
  a.ig_steps = ig_steps;
  check_attribution_patching(model, clean, corrupted, spec, a);
  RunOptions options = m.analysis_options();
  const PatchResult r = with_interrupt(options, [&](const RunOptions& o, const auto& progress) {
    a.cancel = o.cancel;
    return attribution_patching(model, clean, corrupted, spec, a, progress);
  });
  return grid_dict(r.normalised, r.raw, r.shape, r.clean, r.corrupted, r.position, r.runs, spec,
                   patch_site_name(spec.site));
}

py::dict qk_decompose(const PyModel& m, const py::object& input, int64_t layer, int64_t head, int64_t query,
                      int64_t key, bool value) {
  const Model& model = m.model();
  QkRequest request;
  request.layer = layer;
  request.head = head;
  request.query = query;
  request.key = key;
  request.value = value;
  const std::vector<TokenInfo> source = m.tokens_of(input, "input");
  RunOptions options = m.analysis_options();
  const QkDecomposition d = with_interrupt(options, [&](const RunOptions& o, const auto&) {
    return qk_decomposition(model, source, request, o);
  });
  py::dict out;
  out["rows"] = d.rows;
  out["columns"] = d.columns;
  out["cells"] = doubles(d.cells, {int64_t(d.rows.size()), int64_t(d.columns.size())});
  out["score"] = d.score;
  out["total"] = d.total;
  out["scale"] = d.scale;
  out["kv_head"] = d.kv_head;
  if (value) {
    out["value_names"] = d.value_names;
    out["value_parts"] = doubles(d.value_parts, {int64_t(d.value_names.size()), d.d_model});
    out["value_projection"] = doubles(d.value_projection, {int64_t(d.value_projection.size())});
    out["head_output"] = doubles(d.head_output, {d.d_model});
  }
  return out;
}

py::dict dla(const PyModel& m, const py::object& input, const py::object& token, const py::object& against,
             const py::object& positions, bool per_source) {
  const Model& model = m.model();
  DlaRequest request;
  if (!token.is_none()) request.token = token_arg(model, token, "token");
  if (!against.is_none()) request.against = token_arg(model, against, "against");
  if (!positions.is_none()) {
    if (PyIndex_Check(positions.ptr())) request.positions = {py::cast<int64_t>(positions)};
    else request.positions = py::cast<std::vector<int64_t>>(positions);
  }
  request.per_source = per_source;
  const std::vector<TokenInfo> source = m.tokens_of(input, "input");
  RunOptions options = m.analysis_options();
  const LogitAttribution a = with_interrupt(options, [&](const RunOptions& o, const auto&) {
    return logit_attribution(model, source, request, o);
  });
  const int64_t P = int64_t(a.positions.size());
  py::dict out;
  out["positions"] = int64s(a.positions);
  out["tokens"] = int64s(a.tokens);
  out["against"] = a.against;
  out["heads"] = doubles(a.head, {P, a.layers, a.heads});
  out["attn_bias"] = doubles(a.attn_bias, {P, a.layers});
  out["mlp"] = doubles(a.mlp, {P, a.layers});
  out["embed_tokens"] = doubles(a.embed_tokens, {P});
  out["embed_positions"] = doubles(a.embed_positions, {P});
  out["norm_bias"] = doubles(a.norm_bias, {P});
  out["output_bias"] = doubles(a.output_bias, {P});
  out["total"] = doubles(a.total, {P});
  out["logit"] = doubles(a.logit, {P});
  out["norm_scale"] = doubles(a.norm_scale, {P});
  if (per_source) out["per_source"] = doubles(a.per_source, {a.layers, a.heads, P, a.keys});
  return out;
}

py::dict ablate(const PyModel& m, const py::object& input, const py::object& target, const std::string& sweep,
                const std::string& mode, const std::string& metric, const py::object& tokens, int64_t position) {
  const Model& model = m.model();
  SweepSpec spec;
  spec.unit = parse_sweep_unit(sweep, "sweep");
  spec.mode = parse_ablation_mode(mode, "mode");
  spec.metric = parse_sweep_metric(metric, "metric");
  const std::vector<int32_t> ids = token_args(model, tokens, "tokens");
  const size_t want = spec.metric == SweepMetric::LogitDiff ? 2 : 0;
  if (ids.size() != want)
    throw AtlasError(std::string("metric \"") + metric + "\" needs " + (want ? "tokens=(A, B)" : "no tokens") +
                     ", got " + std::to_string(ids.size()));
  if (want) spec.token_a = ids[0], spec.token_b = ids[1];
  spec.position = position;
  const std::vector<TokenInfo> source = m.tokens_of(input, "input");
  std::vector<TokenInfo> target_tokens;
  if (!target.is_none()) {
    if (model.config().architecture != Architecture::EncoderDecoder)
      throw AtlasError("a target is only used by encoder-decoder models; this model is not one");
    target_tokens = py::isinstance<py::str>(target) ? model.tokenize("", py::cast<std::string>(target)).second
                                                    : m.tokens_of(target, "target");
  }
  check_sweep(model, source, target_tokens, spec);
  RunOptions options = m.analysis_options();
  const SweepResult r = with_interrupt(options, [&](const RunOptions& o, const auto& progress) {
    return ablation_sweep(model, source, target_tokens, spec, o, progress);
  });
  std::vector<double> effects(r.values.size());
  for (size_t i = 0; i < effects.size(); ++i) effects[i] = r.values[i] - r.clean;
  py::dict out;
  out["values"] = doubles(r.values, {r.layers, r.heads});
  out["effects"] = doubles(effects, {r.layers, r.heads});
  out["clean"] = r.clean;
  out["position"] = r.position;
  out["rows"] = r.row_labels;
  out["sweep"] = sweep_unit_name(spec.unit);
  out["mode"] = ablation_mode_name(spec.mode);
  out["metric"] = sweep_metric_name(spec.metric);
  return out;
}

// {family: {statistic: [layers, heads]}}: what atlas heads --npy writes.
py::dict head_stats(const PyModel& m, const py::object& input, const py::object& target) {
  RunRequest r;
  r.input = input;
  r.target = target;
  r.hooks = py::none();
  const std::unique_ptr<PyTrace> trace = m.run(r);
  std::vector<HeadStatisticsFamily> families;
  {
    py::gil_scoped_release release;
    families = head_statistics_families(head_statistics(trace->result().trace));
  }
  py::dict out;
  for (const HeadStatisticsFamily& f : families) {
    py::dict stats;
    for (int s = 0; s < kHeadStatisticCount; ++s)
      stats[head_statistic_name(HeadStatistic(s))] = doubles(f.table[s], {f.layers, f.heads});
    out[py::str(f.name)] = stats;
  }
  return out;
}

}  // namespace

void bind_analyses(py::class_<PyModel>& c) {
  c.def("patch", &patch, py::arg("clean"), py::arg("corrupted"), py::arg("site"), py::arg("metric"),
        py::arg("direction") = "denoise", py::arg("tokens") = py::none(), py::arg("position") = -1,
        py::arg("receivers") = py::none(), py::arg("receiver_input") = "q", py::arg("target") = py::none(),
        py::arg("corrupted_target") = py::none(),
        "Activation patching, or path patching with site=\"path\" (atlas patch, docs/patching.md): grid "
        "(normalised: clean 1, corrupted 0), raw, clean, corrupted, position, runs, row_names. An "
        "encoder-decoder model takes its decoder inputs as target= and corrupted_target= (default: target)");
  c.def("attribute", &attribute, py::arg("clean"), py::arg("corrupted"), py::arg("site"), py::arg("metric"),
        py::arg("direction") = "denoise", py::arg("tokens") = py::none(), py::arg("position") = -1,
        py::arg("ig_steps") = 0,
        "Attribution patching, AtP or its integrated-gradients form (atlas attribute, docs/patching.md): the "
        "estimated grid, as patch returns it");
  c.def("qk_decompose", &qk_decompose, py::arg("input"), py::arg("layer"), py::arg("head"), py::arg("query"),
        py::arg("key"), py::arg("value") = false,
        "Why a head attends (atlas qk-decompose, docs/causal.md): cells [rows, columns] of query-side x key-side "
        "components summing to the traced score; value=True adds the value path");
  c.def("dla", &dla, py::arg("input"), py::arg("token") = py::none(), py::arg("against") = py::none(),
        py::arg("positions") = py::none(), py::arg("per_source") = false,
        "Direct logit attribution (atlas dla, docs/causal.md): heads [P, layers, heads], mlp, attn_bias "
        "[P, layers], embed_tokens, embed_positions, norm_bias, output_bias, total, logit [P]");
  c.def("ablate", &ablate, py::arg("input"), py::arg("target") = py::none(), py::arg("sweep") = "heads",
        py::arg("mode") = "zero", py::arg("metric") = "kl", py::arg("tokens") = py::none(),
        py::arg("position") = -1,
        "Ablation sweep (atlas ablate, docs/ablation-sweep.md): values and effects [layers, heads], clean, rows");
  c.def("head_statistics", &head_stats, py::arg("input"), py::arg("target") = py::none(),
        "Head statistics (atlas heads, docs/head-statistics.md): {family: {statistic: [layers, heads]}}");
}

}  // namespace atlas::python
