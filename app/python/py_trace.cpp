#include "app/python/py_trace.h"

#include <algorithm>

#include "core/model/attention_map.h"
#include "core/model/attention_on_demand.h"
#include "core/tensor/error.h"

namespace atlas::python {

namespace {

std::vector<py::ssize_t> byte_strides(const std::vector<py::ssize_t>& shape, py::ssize_t item) {
  std::vector<py::ssize_t> strides(shape.size());
  py::ssize_t s = item;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i];
  }
  return strides;
}

py::dict span_dict(const TokenSpan& s) {
  py::dict d;
  d["tokens"] = token_side_name(s.side);
  d["begin"] = s.begin;
  d["count"] = s.count;
  return d;
}

py::object optional_index(int64_t v) { return v >= 0 ? py::object(py::int_(v)) : py::object(py::none()); }

}  // namespace

std::vector<std::string> PyTrace::aliases() const { return tl_trace_aliases(stack_, names()); }

bool PyTrace::contains(const std::string& name) const {
  if (result_->trace.find(name)) return true;
  const std::vector<std::string> a = aliases();
  return std::find(a.begin(), a.end(), name) != a.end();
}

const TracedArray& PyTrace::resolve(const std::string& name, std::vector<int64_t>* view_shape) const {
  if (const TracedArray* a = result_->trace.find(name)) return *a;
  std::optional<TraceAlias> alias;
  try {
    alias = tl_trace_alias(name, stack_);
  } catch (const AtlasError& e) {  // an alias Atlas has no array for: a missing key all the same
    throw py::key_error(e.what());
  }
  if (alias) {
    if (const TracedArray* a = result_->trace.find(alias->array)) {
      if (view_shape) *view_shape = alias->view_shape;
      return *a;
    }
    throw py::key_error(name + " is " + alias->array + ", which this run did not trace" +
                        (alias->traced_with.empty() ? std::string(" (not traced for this model)")
                                                    : " (run with " + alias->traced_with + ")"));
  }
  std::vector<std::string> all = names();
  const std::vector<std::string> a = aliases();
  all.insert(all.end(), a.begin(), a.end());
  std::string message = "no array \"" + name + "\" in this trace";
  if (const std::string near = nearest_name(name, all); !near.empty()) message += " (nearest: \"" + near + "\")";
  if (const AttentionMap* m = result_->trace.attention_map(name); m && !m->dense)
    message = name + " is an attention map stored " + (m->csr ? "as CSR (<map>.indptr, .indices, .values)"
                                                              : "on demand (computed from <map>.q and .k)") +
              ", not as a dense array: Trace.map(\"" + name + "\", head=None, rows=None) gives its weights";
  throw py::key_error(message);
}

py::array PyTrace::get(const py::object& self, const std::string& name) {
  std::vector<int64_t> view;
  const TracedArray& a = resolve(name, &view);
  const Tensor& t = a.tensor;
  std::vector<py::ssize_t> shape(t.shape.begin(), t.shape.end());
  if (!view.empty()) {  // an alias's view, e.g. [L, heads * d_head] as [L, heads, d_head]
    int64_t known = 1;
    for (int64_t v : view)
      if (v > 0) known *= v;
    shape.clear();
    for (int64_t v : view) shape.push_back(v > 0 ? v : t.numel() / std::max<int64_t>(1, known));
    py::ssize_t cells = 1;
    for (py::ssize_t v : shape) cells *= v;
    if (cells != t.numel())  // never a view past the buffer: a variant whose widths differ
      throw AtlasError(name + ": " + a.name + " holds " + shape_str(t.shape) +
                       ", which does not divide into the alias's heads and head size");
  }
  py::array out;
  if (a.dtype == DType::F32) {
    out = py::array(py::dtype::of<float>(), shape, byte_strides(shape, sizeof(float)), t.data.data(), self);
  } else {
    auto& ints = ints_[a.name];
    if (!ints) {
      ints = std::make_unique<std::vector<int32_t>>(t.data.size());
      std::transform(t.data.begin(), t.data.end(), ints->begin(), [](float v) { return static_cast<int32_t>(v); });
    }
    out = py::array(py::dtype::of<int32_t>(), shape, byte_strides(shape, sizeof(int32_t)), ints->data(), self);
  }
  // Read-only: every read of a name shares one buffer, so writing into one would change them all.
  py::detail::array_proxy(out.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  return out;
}

std::string PyTrace::meaning(const std::string& name) const { return resolve(name, nullptr).meaning; }

py::list PyTrace::catalogue() const {
  py::list out;
  for (const AttentionMap& m : result_->trace.attention_maps) {
    py::dict d;
    d["name"] = m.array;
    d["stack"] = m.stack;
    d["sublayer"] = m.sublayer;
    d["layer"] = m.layer;
    d["segment"] = optional_index(m.segment);
    d["step"] = optional_index(m.step);
    d["round"] = optional_index(m.round);
    d["kind"] = attention_map_kind_name(m.kind);
    d["heads"] = m.heads;
    d["kv_heads"] = m.kv_heads > 0 ? m.kv_heads : m.heads;
    d["queries"] = span_dict(m.queries);
    d["keys"] = span_dict(m.keys);
    d["memory_keys"] = m.memory_keys;
    d["normalized"] = m.normalized;
    d["storage"] = m.dense && m.csr ? "dense+csr" : m.dense ? "dense" : m.csr ? "csr" : "on-demand";
    const TracedArray* dense = m.dense ? result_->trace.find(m.array) : nullptr;
    d["shape"] = dense ? py::object(py::tuple(py::cast(dense->tensor.shape))) : py::object(py::none());
    d["title"] = attention_map_title(m);
    py::dict companions;
    const AttentionCompanions& c = m.companions;
    const std::pair<const char*, const std::string*> fields[] = {
        {"indptr", &c.indptr}, {"indices", &c.indices}, {"values", &c.values}, {"allowed", &c.allowed},
        {"mask", &c.mask}, {"scores", &c.scores}, {"q", &c.q}, {"k", &c.k}, {"key_valid", &c.key_valid},
        {"value_norms", &c.value_norms}};
    for (const auto& [key, value] : fields)
      if (!value->empty()) companions[key] = *value;
    d["companions"] = companions;
    if (m.on_demand) {
      py::dict rule;
      rule["scale"] = m.scale;
      rule["causal"] = m.causal;
      rule["causal_offset"] = m.causal_offset;
      rule["window"] = m.window;
      d["on_demand"] = rule;
    }
    out.append(d);
  }
  return out;
}

const AttentionMap& PyTrace::catalogued_map(const std::string& name) const {
  if (const AttentionMap* m = result_->trace.attention_map(name)) return *m;
  std::optional<TraceAlias> alias;
  try {
    alias = tl_trace_alias(name, stack_);
  } catch (const AtlasError&) {  // an alias without an Atlas array: no map either
  }
  if (alias && alias->view_shape.empty())
    if (const AttentionMap* m = result_->trace.attention_map(alias->array)) return *m;
  std::vector<std::string> maps;
  for (const AttentionMap& m : result_->trace.attention_maps) maps.push_back(m.array);
  std::string message = "no attention map \"" + name + "\" in this trace's catalogue";
  if (const std::string near = nearest_name(name, maps); !near.empty()) message += " (nearest: \"" + near + "\")";
  throw py::key_error(message);
}

namespace {

// Trace.map's head argument: the heads to give (an index, or OnDemandMap's mean / max selector)
// and whether the result keeps a head axis.
std::vector<int64_t> map_heads(const py::object& head, int64_t heads, const std::string& name, bool& head_axis) {
  head_axis = head.is_none();
  std::vector<int64_t> out;
  if (head.is_none()) {
    for (int64_t h = 0; h < heads; ++h) out.push_back(h);
  } else if (py::isinstance<py::str>(head)) {
    const std::string s = py::cast<std::string>(head);
    if (s != "mean" && s != "max") throw AtlasError(name + ": head \"" + s + "\" is not an index, \"mean\" or \"max\"");
    out.push_back(s == "mean" ? OnDemandMap::kMeanOfHeads : OnDemandMap::kMaxOfHeads);
  } else {
    if (PyFloat_Check(head.ptr()) || !PyIndex_Check(head.ptr()))
      throw py::type_error(name + ": head is None, an int, \"mean\" or \"max\"");
    const int64_t h = py::cast<int64_t>(head);
    if (h < 0 || h >= heads)
      throw py::index_error(name + ": head " + std::to_string(h) + " is out of range (0 to " + std::to_string(heads - 1) + ")");
    out.push_back(h);
  }
  return out;
}

// Trace.map's rows argument as [r0, r1); `row_axis` false for a single index.
std::pair<int64_t, int64_t> map_rows(const py::object& rows, int64_t lq, const std::string& name, bool& row_axis) {
  row_axis = true;
  if (rows.is_none()) return {0, lq};
  if (py::isinstance<py::slice>(rows)) {
    py::ssize_t start = 0, stop = 0, step = 0, length = 0;
    if (!py::reinterpret_borrow<py::slice>(rows).compute(py::ssize_t(lq), &start, &stop, &step, &length))
      throw py::error_already_set();
    if (step != 1) throw AtlasError(name + ": rows is a slice with step 1 (take every n-th row of the result)");
    return {start, start + length};
  }
  if (PyFloat_Check(rows.ptr()) || !PyIndex_Check(rows.ptr()))
    throw py::type_error(name + ": rows is None, an int or a slice");
  int64_t r = py::cast<int64_t>(rows);
  if (r < 0) r += lq;
  if (r < 0 || r >= lq)
    throw py::index_error(name + ": row " + py::cast<std::string>(py::str(rows)) + " is out of range (" +
                          std::to_string(lq) + " rows)");
  row_axis = false;
  return {r, r + 1};
}

// Rows [r0, r1) of `head` (an index, or the mean / max selector: summed in head order then divided,
// as OnDemandMap does) of a map stored dense [heads, Lq, Lk] or as CSR.
void weights_of_stored_map(const Trace& trace, const AttentionMap& m, int64_t head, int64_t r0, int64_t r1, float* out) {
  const int64_t heads = m.heads, lq = m.queries.count, lk = m.keys.count, n = (r1 - r0) * lk;
  std::vector<float> one(m.dense ? 0 : size_t(n));
  const auto head_rows = [&](int64_t h) -> const float* {
    if (m.dense) return trace.find(m.array)->tensor.data.data() + (h * lq + r0) * lk;
    const FloatBuffer& indptr = trace.find(m.companions.indptr)->tensor.data;
    const FloatBuffer& indices = trace.find(m.companions.indices)->tensor.data;
    const FloatBuffer& values = trace.find(m.companions.values)->tensor.data;
    const int64_t nnz = int64_t(indices.size());
    std::fill(one.begin(), one.end(), 0.0f);
    for (int64_t i = r0; i < r1; ++i)
      for (auto z = int64_t(indptr[size_t(i)]); z < int64_t(indptr[size_t(i + 1)]); ++z)
        one[size_t((i - r0) * lk + int64_t(indices[size_t(z)]))] = values[size_t(h * nnz + z)];
    return one.data();
  };
  if (head >= 0) {
    const float* src = head_rows(head);
    std::copy(src, src + n, out);
    return;
  }
  const float* first = head_rows(0);
  std::copy(first, first + n, out);
  for (int64_t h = 1; h < heads; ++h) {
    const float* src = head_rows(h);
    for (int64_t t = 0; t < n; ++t) out[t] = head == OnDemandMap::kMeanOfHeads ? out[t] + src[t] : std::max(out[t], src[t]);
  }
  if (head == OnDemandMap::kMeanOfHeads)
    for (int64_t t = 0; t < n; ++t) out[t] /= float(heads);
}

}  // namespace

py::array_t<float> PyTrace::map(const std::string& name, const py::object& head, const py::object& rows) const {
  const AttentionMap& m = catalogued_map(name);
  bool head_axis = false, row_axis = false;
  const std::vector<int64_t> heads = map_heads(head, m.heads, m.array, head_axis);
  const auto [r0, r1] = map_rows(rows, m.queries.count, m.array, row_axis);
  const int64_t lk = m.keys.count, n = (r1 - r0) * lk;
  std::vector<py::ssize_t> shape;
  if (head_axis) shape.push_back(py::ssize_t(heads.size()));
  if (row_axis) shape.push_back(r1 - r0);
  shape.push_back(lk);
  py::array_t<float> out(shape);
  float* dst = out.mutable_data();
  {
    py::gil_scoped_release unlocked;  // an on-demand head at 16k tokens is seconds of work
    if (m.dense || m.csr) {
      for (size_t i = 0; i < heads.size(); ++i) weights_of_stored_map(result_->trace, m, heads[i], r0, r1, dst + int64_t(i) * n);
    } else {
      const OnDemandMap on_demand(std::shared_ptr<const Trace>(result_, &result_->trace), m);
      for (size_t i = 0; i < heads.size(); ++i) {
        const std::vector<float> got = on_demand.rows(heads[i], r0, r1);
        std::copy(got.begin(), got.end(), dst + int64_t(i) * n);
      }
    }
  }
  return out;
}

std::vector<std::string> PyTrace::token_labels(bool target) const {
  std::vector<std::string> out;
  for (const TokenInfo& t : target ? result_->trace.target_tokens : result_->trace.source_tokens)
    out.push_back(t.label);
  return out;
}

std::vector<int32_t> PyTrace::token_ids(bool target) const {
  return atlas::token_ids(target ? result_->trace.target_tokens : result_->trace.source_tokens);
}

}  // namespace atlas::python
