// Hugging Face config.json -> engine ModelConfig (hf_checkpoint.h): typed reads that name
// the file and key, the family table, the tokenizer files. No tensors are read here, so the
// config stage can be fuzzed on its own (tests/fuzz/fuzz_hf_config.cpp).
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/formats/input_file.h"
#include "core/formats/json_text.h"
#include "core/tensor/error.h"
#include "core/formats/hf/hf_checkpoint.h"
#include "core/formats/hf/hf_families.h"
#include "core/formats/hf/hf_tokenizer_files.h"

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

int64_t ConfigReader::dimension(const char* key, int64_t max) const {
  const int64_t v = required_integer(key);
  if (v < 1 || v > max)
    refuse(std::string(key) + " is " + std::to_string(v) + ", out of range: it must be from 1 to " +
           std::to_string(max));
  return v;
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

const std::vector<Family>& families() {
  static const std::vector<Family> all = [] {
    std::vector<Family> f = {gpt2_family(), bert_family(), distilbert_family(), vit_family()};
    for (Family& l : llama_families()) f.push_back(std::move(l));
    return f;
  }();
  return all;
}

std::string read_text(const std::string& file) {
  return read_input_file(file, InputKind::ModelConfig);
}

ConfigStage read_config_stage(const std::string& dir_str, const HfLoadOptions& options) {
  const fs::path dir(dir_str);
  const fs::path config_path = dir / "config.json";
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(config_path, ec)))
    throw AtlasError(dir.string() + ": no config.json (a Hugging Face model directory holds "
                     "config.json and model.safetensors)");
  const std::string text = read_text(config_path);
  nlohmann::json j;
  try {
    j = parse_json_text(text, "", JsonLimits{128, false});  // written by Python: the last key wins
  } catch (const AtlasError& e) {
    throw AtlasError(config_path.string() + ": not valid JSON (" + e.what() + ")");
  }
  if (!j.is_object() || !j.contains("model_type") || !j["model_type"].is_string())
    throw AtlasError(config_path.string() + ": no \"model_type\" string (not a Hugging Face config)");
  const std::string model_type = j["model_type"].get<std::string>();
  const Family* family = nullptr;
  std::string supported;
  for (const Family& f : families()) {
    supported += (supported.empty() ? "" : ", ") + std::string(f.model_type);
    if (model_type == f.model_type) family = &f;
  }
  if (!family)
    throw AtlasError(config_path.string() + ": model_type \"" + model_type +
                     "\" is not supported (supported: " + supported + ")");

  const ConfigReader reader{j, config_path.string()};
  ConfigStage out{family->config(reader), family, config_path.string()};
  out.config.name = dir.filename().empty() ? dir.parent_path().filename().string()
                                           : dir.filename().string();
  out.config.description = "Hugging Face " + model_type + " checkpoint";
  // An image classifier's "tokenizer" is its label list, already read from config.json.
  if (options.tokenizer && out.config.tokenizer.kind != TokenizerKind::Labels)
    out.config.tokenizer = read_hf_tokenizer(dir.string(), model_type, text);
  validate_config(out.config, config_path.string());
  return out;
}

}  // namespace hf

ModelConfig read_hf_config(const std::string& dir, const HfLoadOptions& options) {
  return hf::read_config_stage(dir, options).config;
}

}  // namespace atlas
