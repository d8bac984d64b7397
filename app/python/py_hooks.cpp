#include "app/python/py_hooks.h"

#include <cstring>
#include <pybind11/numpy.h>

#include "app/python/norm_scale.h"
#include "core/tensor/error.h"

namespace atlas::python {

namespace {

std::string shape_text(const std::vector<py::ssize_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

[[noreturn]] void raise_value_error(const std::string& message) {
  PyErr_SetString(PyExc_ValueError, message.c_str());
  throw py::error_already_set();
}

}  // namespace

PythonHooks::PythonHooks(const py::dict& hooks, const Model& model, const std::optional<SingleStack>& stack)
    : model_(&model) {
  for (const auto& [key, value] : hooks) {
    const std::string name = py::cast<std::string>(key);
    if (!PyCallable_Check(value.ptr()))
      throw py::type_error("hook \"" + name + "\": the value must be a callable fn(activation)");
    try {
      hooks_.push_back({name, hook_point(name, model, stack), py::reinterpret_borrow<py::object>(value)});
    } catch (const AtlasError& e) {
      throw py::key_error(e.what());
    }
  }
}

ActivationHooks PythonHooks::engine_hooks() {
  using Kind = HookPoint::Kind;
  ActivationHooks out;
  const auto wants = [this](std::initializer_list<Kind> kinds) {
    for (const Hook& h : hooks_)
      for (Kind k : kinds)
        if (h.point.kind == k) return true;
    return false;
  };
  // Calls the hooks of `kind` at `prefix` on `t`.
  const auto run = [this](Kind kind, const std::string& prefix, Tensor& t) {
    for (Hook& h : hooks_)
      if (h.point.kind == kind && h.point.prefix == prefix) call(h, t);
  };
  if (wants({Kind::Heads})) out.heads = [run](const std::string& prefix, Tensor& t) { run(Kind::Heads, prefix, t); };
  if (wants({Kind::LayerOutput}))
    out.layer = [run](const std::string& layer, const Tensor&, Tensor& t) { run(Kind::LayerOutput, layer, t); };
  if (wants({Kind::Q, Kind::K, Kind::V}))
    out.qkv = [run](const std::string& prefix, Tensor& q, Tensor& k, Tensor& v) {
      run(Kind::Q, prefix, q);
      run(Kind::K, prefix, k);
      run(Kind::V, prefix, v);
    };
  if (wants({Kind::Pattern}))
    out.pattern = [run](const std::string& prefix, Tensor& p) { run(Kind::Pattern, prefix, p); };
  if (wants({Kind::SublayerOutput}))
    out.sublayer_output = [run](const std::string& prefix, Tensor& t) { run(Kind::SublayerOutput, prefix, t); };
  if (wants({Kind::StackInput}))
    out.stack_input = [run](const std::string& stack, Tensor& t) { run(Kind::StackInput, stack, t); };
  if (wants({Kind::Residual}))
    out.residual = [run](const std::string& prefix, Tensor& t) { run(Kind::Residual, prefix, t); };
  if (wants({Kind::NormScale})) {  // TransformerLens's order: hook_scale, then hook_normalized
    const Model* model = model_;
    out.norm = [this, run, model](const std::string& norm, const Tensor& x, Tensor& y) {
      for (Hook& h : hooks_)
        if (h.point.kind == Kind::NormScale && h.point.prefix == norm) {
          const Tensor before = norm_scale(model->config(), x);
          Tensor scale = before;
          call(h, scale);
          renormalize_rows(*model, norm, x, before, scale, y);
        }
      run(Kind::Norm, norm, y);
    };
  } else if (wants({Kind::Norm})) {
    out.norm = [run](const std::string& norm, const Tensor&, Tensor& t) { run(Kind::Norm, norm, t); };
  }
  return out;
}

void PythonHooks::call(Hook& hook, Tensor& activation) {
  py::gil_scoped_acquire gil;  // the forward runs with the GIL released
  if (error) throw PythonHookFailed();
  ++hook.calls;
  try {
    std::vector<py::ssize_t> shape;
    if (hook.point.view_heads.empty()) {
      shape.assign(activation.shape.begin(), activation.shape.end());
    } else {  // hook_z: [L, heads * d_head] as TransformerLens's [L, heads, d_head]
      shape = {activation.shape.at(0)};
      shape.insert(shape.end(), hook.point.view_heads.begin(), hook.point.view_heads.end());
    }
    py::ssize_t cells = 1;
    for (py::ssize_t v : shape) cells *= v;
    if (cells != activation.numel())  // hook_z of a sub-layer whose width is not heads x d_head
      throw AtlasError("hook \"" + hook.name + "\": the activation " + shape_str(activation.shape) +
                       " does not divide into " + shape_text(shape));
    py::array_t<float> given(shape);  // a copy the function owns and may keep
    std::memcpy(given.mutable_data(), activation.data.data(), activation.data.size() * sizeof(float));
    const py::object returned = hook.fn(given);
    py::array_t<float, py::array::c_style | py::array::forcecast> result;
    if (returned.is_none()) {
      result = given;
    } else {
      result = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(returned);
      if (!result)
        raise_value_error("hook \"" + hook.name + "\" returned a " +
                          py::cast<std::string>(py::str(py::type::of(returned).attr("__name__"))) +
                          "; return a numpy array of shape " + shape_text(shape) + " or None");
    }
    const std::vector<py::ssize_t> got(result.shape(), result.shape() + result.ndim());
    if (got != shape)
      raise_value_error("hook \"" + hook.name + "\" returned an array of shape " + shape_text(got) +
                        "; the activation's shape is " + shape_text(shape));
    std::memcpy(activation.data.data(), result.data(), activation.data.size() * sizeof(float));
  } catch (py::error_already_set& e) {
    error.emplace(std::move(e));
    throw PythonHookFailed();
  }
}

void PythonHooks::check_all_called(const Model& model) const {
  for (const Hook& h : hooks_)
    if (h.calls == 0)
      throw AtlasError("hook \"" + h.name + "\" was never called: " + model.config().name +
                       "'s forward does not pass through " + h.point.prefix +
                       (h.point.kind == HookPoint::Kind::LayerOutput
                            ? " (stacks of their own kind, e.g. Transformer-XL, Universal Transformer or "
                              "reversible layers, call no layer-output hooks)"
                        : h.point.kind == HookPoint::Kind::SublayerOutput || h.point.kind == HookPoint::Kind::StackInput
                            ? ""
                        : h.point.kind == HookPoint::Kind::Residual
                            ? " (Transformer-XL's and reversible stacks call no residual-sum hooks)"
                        : h.point.kind == HookPoint::Kind::Norm || h.point.kind == HookPoint::Kind::NormScale
                            ? " (Transformer-XL's stack calls no norm hooks)"
                        : h.point.kind == HookPoint::Kind::Pattern
                            ? " with a softmax pattern (only the plain softmax kernel calls the pattern hook: "
                              "mechanism kernels such as ALiBi, Shaw, sparse, LSH or Performer and "
                              "Transformer-XL do not)"
                        : h.point.kind != HookPoint::Kind::Heads
                            ? " with q, k and v hooks (Transformer-XL's relative attention calls none)"
                            : ""));
}

}  // namespace atlas::python
