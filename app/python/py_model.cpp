#include "app/python/py_model.h"

#include <atomic>

#include "app/python/py_hooks.h"
#include "app/python/py_interrupt.h"
#include "core/config/config.h"
#include "core/formats/model_io.h"
#include "core/input/image_model_input.h"
#include "core/tensor/error.h"
#ifdef ATLAS_HAVE_VULKAN
#include "gpu/vulkan_backend.h"
#endif

namespace atlas::python {

namespace {

// As the CLI's --backend (app/cli/backend_choice.cpp), without its fallback message: "auto"
// takes Vulkan only when a non-CPU device exists.
std::unique_ptr<Backend> open_backend(const std::string& backend, const std::string& device, std::string& name) {
  if (backend == "cpu") return nullptr;
  if (backend != "vulkan" && backend != "auto")
    throw AtlasError("backend must be \"cpu\", \"vulkan\" or \"auto\", got \"" + backend + "\"");
#ifdef ATLAS_HAVE_VULKAN
  if (backend == "auto" && device.empty() && !vulkan_has_non_cpu_device()) return nullptr;
  VulkanOptions options;
  options.device = device;
  name = "vulkan";
  return make_vulkan_backend(options);
#else
  if (backend == "vulkan") throw AtlasError("this build has no Vulkan backend (configured with ATLAS_VULKAN=OFF)");
  return nullptr;
#endif
}

// A numpy array of two or three axes is an image: uint8 [H, W] (grey) or [H, W, 3] (RGB).
std::optional<RgbImage> image_of(const py::object& input) {
  if (!py::isinstance<py::array>(input)) return std::nullopt;
  const auto a = py::reinterpret_borrow<py::array>(input);
  if (a.ndim() < 2) return std::nullopt;
  const std::string shape = py::cast<std::string>(py::str(input.attr("shape")));
  if (!a.dtype().is(py::dtype::of<uint8_t>()))
    throw py::type_error("an image is a uint8 array [H, W] or [H, W, 3]; got dtype " +
                         py::cast<std::string>(py::str(a.dtype())) +
                         " (floats in [0, 1]: (x * 255).round().astype(numpy.uint8))");
  if (a.ndim() > 3 || (a.ndim() == 3 && a.shape(2) != 3))
    throw AtlasError("an image is [H, W] (grey) or [H, W, 3] (RGB), got shape " + shape +
                     (a.ndim() == 3 && a.shape(2) == 4 ? " (RGBA: drop the alpha channel, image[..., :3])" : ""));
  const py::array_t<uint8_t, py::array::c_style> pixels(a);  // a contiguous view or copy
  RgbImage image;
  image.height = pixels.shape(0);
  image.width = pixels.shape(1);
  const int64_t n = image.height * image.width;
  image.rgb.resize(size_t(n * 3));
  const uint8_t* in = pixels.data();
  if (a.ndim() == 3) std::copy(in, in + n * 3, image.rgb.begin());
  else
    for (int64_t i = 0; i < n; ++i) image.rgb[size_t(3 * i)] = image.rgb[size_t(3 * i + 1)] = image.rgb[size_t(3 * i + 2)] = in[i];
  return image;
}

MapStorage map_storage(const std::string& maps) {
  if (maps == "auto") return MapStorage::Auto;
  if (maps == "stored") return MapStorage::Stored;
  if (maps == "on-demand") return MapStorage::OnDemand;
  throw AtlasError("maps \"" + maps + "\" is not one of \"auto\", \"stored\", \"on-demand\"");
}

// maps=: a storage name, or the attention maps to trace (by catalogue name, or hook_pattern's
// TransformerLens alias), as TraceOptions::only_maps; the engine refuses a name no map of the run
// has once the run ends (the run's catalogue is the truth).
// storage=: how the selected maps are kept ("auto" with a selection unless given; with a storage
// name as maps=, storage= must be absent).
void set_maps(TraceOptions& trace, const py::object& maps, const std::optional<std::string>& storage,
              const std::optional<SingleStack>& stack) {
  if (storage) trace.maps = map_storage(*storage);
  if (!maps || maps.is_none()) return;  // a RunRequest made in C++ (the analyses): "auto"
  if (py::isinstance<py::str>(maps)) {
    if (storage)
      throw AtlasError("storage= is how the maps of maps=[names] are kept; with maps=\"" + py::cast<std::string>(maps) +
                       "\" give one of them");
    trace.maps = map_storage(py::cast<std::string>(maps));
    return;
  }
  if (!py::isinstance<py::sequence>(maps))
    throw py::type_error("maps must be \"auto\", \"stored\", \"on-demand\" or a list of attention map names");
  for (const py::handle item : maps) {
    if (!py::isinstance<py::str>(item)) throw py::type_error("maps: a map name is a str");
    std::string name = py::cast<std::string>(item);
    std::optional<TraceAlias> alias;
    try {
      alias = tl_trace_alias(name, stack);
    } catch (const AtlasError&) {  // an alias without an Atlas array: refused as an unknown map below
    }
    if (alias && alias->view_shape.empty() && is_attention_array_name(alias->array)) name = alias->array;
    trace.only_maps.push_back(std::move(name));
  }
  if (trace.only_maps.empty())
    throw AtlasError("maps=[] selects no attention map; give map names (Trace.catalogue) or \"auto\"");
}

}  // namespace

PyModel::PyModel(const std::string& spec, const std::string& backend, const std::string& device,
                 std::optional<uint64_t> seed) {
  spec_ = spec;
  py::gil_scoped_release release;  // a large checkpoint takes a while to open
  backend_ = open_backend(backend, device, backend_name_);
  LoadOptions load;
  load.seed = seed;
  model_ = std::make_unique<Model>(load_model(spec, load));
  stack_ = single_stack(*model_);
}

std::string PyModel::config_json() const { return config_to_json(model_->config()); }

std::pair<std::vector<int32_t>, std::vector<std::string>> PyModel::tokenize(const std::string& text) const {
  const std::vector<TokenInfo> tokens = model_->tokenize(text, "").first;
  std::vector<std::string> labels;
  for (const TokenInfo& t : tokens) labels.push_back(t.label);
  return {token_ids(tokens), labels};
}

std::vector<TokenInfo> PyModel::tokens_of_ids(const py::handle& ids, const char* what) const {
  const Tokenizer& tok = model_->tokenizer();
  const int64_t vocab = model_->config().vocab_size;
  std::vector<TokenInfo> out;
  for (const py::handle item : ids) {
    if (PyFloat_Check(item.ptr()) || !PyIndex_Check(item.ptr()))
      throw py::type_error(std::string(what) + ": token ids must be integers, got " +
                           py::cast<std::string>(py::str(py::type::of(item).attr("__name__"))));
    const int64_t id = py::cast<int64_t>(item);
    if (id < 0 || id >= vocab)
      throw AtlasError(std::string(what) + ": token id " + std::to_string(id) + " is outside the vocabulary of " +
                       std::to_string(vocab));
    const auto i32 = static_cast<int32_t>(id);
    out.push_back({i32, i32 < tok.vocab_size() ? tok.label(i32) : "<" + std::to_string(id) + ">"});
  }
  return out;
}

std::vector<TokenInfo> PyModel::tokens_of(const py::object& input, const char* what) const {
  if (py::isinstance<py::str>(input)) return model_->tokenize(py::cast<std::string>(input), "").first;
  if (const std::optional<RgbImage> image = image_of(input)) return image_model_input(model_->config(), *image).tokens;
  if (!py::isinstance<py::sequence>(input) && !py::hasattr(input, "__array__"))
    throw py::type_error(std::string(what) + ": must be a str or a sequence of token ids");
  return tokens_of_ids(input, what);
}

RunOptions PyModel::analysis_options() const {
  RunOptions options;
  options.backend = backend_.get();
  return options;
}

std::unique_ptr<PyTrace> PyModel::run(const RunRequest& r) const {
  RunOptions options;
  options.trace.scores = r.scores;
  options.trace.hidden = r.hidden;
  options.trace.qk = r.qk;
  options.trace.value_norms = r.value_norms;
  set_maps(options.trace, r.maps, r.storage, stack_);
  options.threads = r.threads;
  options.backend = backend_.get();

  std::vector<TokenInfo> source, target;
  const bool text = py::isinstance<py::str>(r.input);
  if (!text && !py::isinstance<py::sequence>(r.input) && !py::hasattr(r.input, "__array__"))
    throw py::type_error("run: the input must be a str, a sequence of token ids or an image (uint8 array)");
  const std::string target_text = py::isinstance<py::str>(r.target) ? py::cast<std::string>(r.target) : "";
  if (text) {
    std::tie(source, target) = model_->tokenize(py::cast<std::string>(r.input), target_text);
  } else if (const std::optional<RgbImage> image = image_of(r.input)) {
    source = image_model_input(model_->config(), *image).tokens;
  } else {
    source = tokens_of_ids(r.input, "input");
    if (!target_text.empty()) target = model_->tokenize("", target_text).second;
  }
  if (!r.target.is_none() && !py::isinstance<py::str>(r.target)) target = tokens_of_ids(r.target, "target");
  if (!target.empty() && model_->config().architecture != Architecture::EncoderDecoder)
    throw AtlasError("a target is only used by encoder-decoder models; this model is not one");

  std::optional<PythonHooks> hooks;
  if (!r.hooks.is_none()) {
    if (!py::isinstance<py::dict>(r.hooks)) throw py::type_error("hooks must be a dict {hook name: fn}");
    hooks.emplace(py::reinterpret_borrow<py::dict>(r.hooks), *model_, stack_);
    options.hooks = hooks->engine_hooks();
  }
  Interrupt interrupt;  // Ctrl-C between layers
  options.cancel = &interrupt.cancel;
  options.progress = [&](double, const std::string&) { interrupt.check(); };

  std::shared_ptr<RunResult> result;
  {
    py::gil_scoped_release release;
    try {
      result = model_->forward_shared(source, target, options);
    } catch (...) {  // a hook's exception or the interrupt is raised below, with the GIL held
      if (!(hooks && hooks->error) && !interrupt.error) throw;
    }
  }
  if (hooks && hooks->error) throw *hooks->error;
  if (interrupt.error) throw *interrupt.error;
  if (hooks) hooks->check_all_called(*model_);
  return std::make_unique<PyTrace>(std::move(result), stack_);
}

}  // namespace atlas::python
