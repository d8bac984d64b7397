#include "app/python/py_trace.h"

#include <algorithm>

#include "core/model/attention_map.h"
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
              ", not as a dense array";
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
