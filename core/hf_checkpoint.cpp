// Hugging Face directory loader (hf_checkpoint.h): config.json -> family mapping (hf_gpt2.cpp,
// hf_bert.cpp) -> ModelConfig; model.safetensors or its shards -> engine tensors.
#include "hf_checkpoint.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "error.h"
#include "hf_families.h"
#include "hf_tokenizer_files.h"
#include "safetensors.h"

namespace atlas {

namespace fs = std::filesystem;

namespace hf {

// ---- ConfigReader -------------------------------------------------------------------------

void ConfigReader::refuse(const std::string& message) const {
  throw AtlasError(origin + ": " + message);
}

int64_t ConfigReader::integer(const char* key, int64_t fallback) const {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_number_integer())
    refuse(std::string(key) + " must be an integer, got " + it->dump());
  return it->get<int64_t>();
}

int64_t ConfigReader::required_integer(const char* key) const {
  if (!j.contains(key)) refuse(std::string("missing key \"") + key + "\"");
  return integer(key, 0);
}

double ConfigReader::number(const char* key, double fallback) const {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_number()) refuse(std::string(key) + " must be a number, got " + it->dump());
  return it->get<double>();
}

std::string ConfigReader::string(const char* key, const std::string& fallback) const {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_string()) refuse(std::string(key) + " must be a string, got " + it->dump());
  return it->get<std::string>();
}

bool ConfigReader::boolean(const char* key, bool fallback) const {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) refuse(std::string(key) + " must be true or false, got " + it->dump());
  return it->get<bool>();
}

FfnActivation activation_from(const ConfigReader& r, const char* key, const std::string& fallback) {
  const std::string a = r.string(key, fallback);
  if (a == "gelu") return FfnActivation::Gelu;  // erf form (torch.nn.functional.gelu)
  if (a == "gelu_new" || a == "gelu_pytorch_tanh" || a == "gelu_fast")
    return FfnActivation::GeluTanh;  // tanh approximation (GPT-2's gelu)
  if (a == "relu") return FfnActivation::ReLU;
  r.refuse(std::string(key) + " \"" + a +
           "\" is not supported (gelu, gelu_new, gelu_pytorch_tanh, gelu_fast, relu)");
}

// ---- tensor helpers -----------------------------------------------------------------------

Tensor transpose(const Tensor& t) {
  Tensor out({t.shape[1], t.shape[0]});
  out.mat() = t.mat().transpose();
  return out;
}

Tensor columns(const Tensor& t, int64_t begin, int64_t end) {
  Tensor out({t.shape[0], end - begin});
  out.mat() = t.mat().middleCols(begin, end - begin);
  return out;
}

Tensor slice(const Tensor& t, int64_t begin, int64_t end) {
  Tensor out({end - begin});
  std::copy(t.data.begin() + begin, t.data.begin() + end, out.data.begin());
  return out;
}

// ---- TensorSource -------------------------------------------------------------------------

TensorSource::TensorSource(std::map<std::string, Tensor> tensors,
                           std::map<std::string, std::string> origin_of,
                           std::vector<std::string> prefixes, std::string config_origin)
    : tensors_(std::move(tensors)), origin_of_(std::move(origin_of)),
      prefixes_(std::move(prefixes)), config_origin_(std::move(config_origin)) {
  prefixes_.insert(prefixes_.begin(), "");
}

std::string TensorSource::resolve(const std::string& name) const {
  for (const std::string& p : prefixes_)
    if (tensors_.count(p + name) || used_.count(p + name)) return p + name;
  return {};
}

bool TensorSource::has(const std::string& name) const { return !resolve(name).empty(); }

Tensor TensorSource::take(const std::string& name, const Shape& expected) {
  const std::string key = resolve(name);
  if (key.empty()) {
    std::set<std::string> files;
    for (const auto& [n, file] : origin_of_) files.insert(file);
    std::string list;
    for (const auto& f : files) list += (list.empty() ? "" : ", ") + f;
    throw AtlasError(list + ": missing tensor " + name + " " + shape_str(expected) +
                     " required by " + config_origin_);
  }
  auto it = tensors_.find(key);
  if (it == tensors_.end()) throw AtlasError("internal: tensor " + key + " taken twice");
  if (it->second.shape != expected)
    throw AtlasError(origin_of_[key] + ": tensor " + key + " has shape " +
                     shape_str(it->second.shape) + ", but " + config_origin_ + " implies " +
                     shape_str(expected));
  Tensor t = std::move(it->second);
  tensors_.erase(it);  // frees the float copy as soon as the engine tensor exists
  used_.insert(key);
  return t;
}

std::vector<std::string> TensorSource::leftovers(bool (*skippable)(const std::string&)) const {
  std::vector<std::string> skipped;
  for (const auto& [name, t] : tensors_) {
    if (skippable(name)) {
      skipped.push_back(name);
      continue;
    }
    auto it = origin_of_.find(name);
    throw AtlasError((it == origin_of_.end() ? std::string("checkpoint") : it->second) +
                     ": unexpected tensor " + name + " " + shape_str(t.shape) +
                     " (not part of this model family's layout; is model_type in " +
                     config_origin_ + " right?)");
  }
  return skipped;
}

}  // namespace hf

namespace {

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw AtlasError(path.string() + ": cannot open for reading");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

const std::vector<hf::Family>& families() {
  static const std::vector<hf::Family> all = {hf::gpt2_family(), hf::bert_family(),
                                              hf::distilbert_family(), hf::vit_family()};
  return all;
}

std::string pickle_advice(const fs::path& dir, const std::string& file) {
  return (dir / file).string() +
         " is a PyTorch pickle, which is not read (unpickling can run arbitrary code), and "
         "the directory has no model.safetensors. Convert it once with Python: "
         "python -c \"from transformers import AutoModel; m = AutoModel.from_pretrained('" +
         dir.string() + "'); m.save_pretrained('" + dir.string() +
         "', safe_serialization=True)\"";
}

}  // namespace

bool is_hf_directory(const std::string& dir) {
  const fs::path config = fs::path(dir) / "config.json";
  if (!fs::is_regular_file(config)) return false;
  try {
    nlohmann::json j = nlohmann::json::parse(read_text(config));
    return j.is_object() && j.contains("model_type");
  } catch (const nlohmann::json::exception&) {
    return false;  // the regular loader reports the JSON error
  }
}

std::map<std::string, Tensor> read_hf_tensors(const std::string& dir_str,
                                              std::map<std::string, std::string>& origin_of) {
  const fs::path dir(dir_str);
  const fs::path single = dir / "model.safetensors";
  const fs::path index = dir / "model.safetensors.index.json";
  std::map<std::string, Tensor> tensors;
  if (fs::exists(single)) {
    SafetensorsFile f = read_safetensors(single.string());
    for (auto& [name, t] : f.tensors) origin_of[name] = single.string();
    return std::move(f.tensors);
  }
  if (!fs::exists(index)) {
    for (const char* pickle : {"pytorch_model.bin", "pytorch_model.bin.index.json"})
      if (fs::exists(dir / pickle)) throw AtlasError(pickle_advice(dir, pickle));
    throw AtlasError(dir.string() + ": no model.safetensors and no model.safetensors.index.json "
                     "(the weights of a Hugging Face model directory)");
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_text(index));
  } catch (const nlohmann::json::exception& e) {
    throw AtlasError(index.string() + ": not valid JSON (" + e.what() + ")");
  }
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
    throw AtlasError(index.string() + ": no \"weight_map\" object (tensor name -> shard file)");
  std::map<std::string, std::vector<std::string>> by_shard;  // shard -> tensors it must hold
  for (const auto& [name, shard] : j["weight_map"].items()) {
    if (!shard.is_string())
      throw AtlasError(index.string() + ": weight_map entry for " + name + " is not a file name");
    const std::string file = shard.get<std::string>();
    if (file.find('/') != std::string::npos || file.find("..") != std::string::npos)
      throw AtlasError(index.string() + ": shard name \"" + file +
                       "\" must be a file in the same directory");
    by_shard[file].push_back(name);
  }
  for (const auto& [file, names] : by_shard) {
    const fs::path path = dir / file;
    if (!fs::exists(path))
      throw AtlasError(path.string() + ": missing shard (listed in " + index.string() + " for " +
                       std::to_string(names.size()) + " tensors, e.g. " + names.front() + ")");
    SafetensorsFile f = read_safetensors(path.string());
    for (const std::string& name : names)
      if (!f.tensors.count(name))
        throw AtlasError(path.string() + ": has no tensor " + name + ", which " +
                         index.string() + " places in this shard");
    for (auto& [name, t] : f.tensors) {
      if (tensors.count(name))
        throw AtlasError(path.string() + ": tensor " + name + " is also in " + origin_of[name]);
      origin_of[name] = path.string();
      tensors[name] = std::move(t);
    }
  }
  return tensors;
}

HfCheckpoint read_hf_checkpoint(const std::string& dir_str, const HfLoadOptions& options) {
  const fs::path dir(dir_str);
  const fs::path config_path = dir / "config.json";
  if (!fs::exists(config_path))
    throw AtlasError(dir.string() + ": no config.json (a Hugging Face model directory holds "
                     "config.json and model.safetensors)");
  const std::string text = read_text(config_path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw AtlasError(config_path.string() + ": not valid JSON (" + e.what() + ")");
  }
  if (!j.is_object() || !j.contains("model_type") || !j["model_type"].is_string())
    throw AtlasError(config_path.string() + ": no \"model_type\" string (not a Hugging Face config)");
  const std::string model_type = j["model_type"].get<std::string>();
  const hf::Family* family = nullptr;
  std::string supported;
  for (const hf::Family& f : families()) {
    supported += (supported.empty() ? "" : ", ") + std::string(f.model_type);
    if (model_type == f.model_type) family = &f;
  }
  if (!family)
    throw AtlasError(config_path.string() + ": model_type \"" + model_type +
                     "\" is not supported (supported: " + supported + ")");

  const hf::ConfigReader reader{j, config_path.string()};
  HfCheckpoint out;
  out.config = family->config(reader);
  out.config.name = dir.filename().empty() ? dir.parent_path().filename().string()
                                           : dir.filename().string();
  out.config.description = "Hugging Face " + model_type + " checkpoint";
  // An image classifier's "tokenizer" is its label list, already read from config.json.
  if (options.tokenizer && out.config.tokenizer.kind != TokenizerKind::Labels)
    out.config.tokenizer = read_hf_tokenizer(dir.string(), model_type, text);
  validate_config(out.config, config_path.string());

  std::map<std::string, std::string> origin_of;
  std::map<std::string, Tensor> raw = read_hf_tensors(dir.string(), origin_of);
  hf::TensorSource source(std::move(raw), std::move(origin_of), family->prefixes,
                          config_path.string());
  family->params(out.config, source, out.params);
  out.skipped = source.leftovers(family->skippable);
  validate_config(out.config, config_path.string());  // params may have dropped a head
  check_params(out.config, out.params, dir.string());  // the mapping is complete
  return out;
}

Model load_hf_directory(const std::string& dir, const HfLoadOptions& options) {
  HfCheckpoint c = read_hf_checkpoint(dir, options);
  return Model(std::move(c.config), std::move(c.params));
}

}  // namespace atlas
