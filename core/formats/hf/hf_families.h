#pragma once
// Internal to the Hugging Face loader (hf_checkpoint.cpp): one mapping per model family from
// the HF config.json keys and tensor names to the engine's ModelConfig and tensor names.
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/config/config_limits.h"
#include "core/formats/hf/hf_checkpoint.h"
#include "core/model/params.h"

namespace atlas::hf {

using Json = nlohmann::json;

// Typed reads of config.json values; messages name the file and the key.
struct ConfigReader {
  const Json& j;
  std::string origin;  // path of config.json
  int64_t integer(const char* key, int64_t fallback) const;
  int64_t required_integer(const char* key) const;
  // A required size (hidden_size, num_attention_heads, ...) within 1..max, the engine's own
  // limit for it (core/config/config_limits.h), checked before any arithmetic uses it.
  int64_t dimension(const char* key, int64_t max) const;
  double number(const char* key, double fallback) const;
  std::string string(const char* key, const std::string& fallback) const;
  bool boolean(const char* key, bool fallback) const;
  [[noreturn]] void refuse(const std::string& message) const;
};

// The HF tensors of one checkpoint. take() finds a tensor with or without the family's name
// prefix ("transformer.", "bert.", ...), checks its shape and marks it used.
class TensorSource {
 public:
  TensorSource(std::map<std::string, Tensor> tensors, std::map<std::string, std::string> origin_of,
               std::vector<std::string> prefixes, std::string config_origin);
  Tensor take(const std::string& name, const Shape& expected);
  bool has(const std::string& name) const;
  // Names never taken: skipped when `skippable`, otherwise an "unexpected tensor" error.
  std::vector<std::string> leftovers(bool (*skippable)(const std::string& name)) const;

 private:
  std::string resolve(const std::string& name) const;
  std::map<std::string, Tensor> tensors_;
  std::map<std::string, std::string> origin_of_;
  std::vector<std::string> prefixes_;
  std::string config_origin_;
  std::set<std::string> used_;
};

// Activation names of HF configs ("gelu", "gelu_new", "relu", ...).
FfnActivation activation_from(const ConfigReader& r, const char* key, const std::string& fallback);
Tensor transpose(const Tensor& t);                           // [a, b] -> [b, a]
Tensor columns(const Tensor& t, int64_t begin, int64_t end);  // [a, b] -> [a, end - begin]
Tensor slice(const Tensor& t, int64_t begin, int64_t end);    // 1-D [n] -> [end - begin]

struct Family {
  const char* model_type;
  std::vector<std::string> prefixes;  // optional name prefixes, e.g. "transformer."
  ModelConfig (*config)(const ConfigReader& r);
  // May adjust the config to the tensors present (a checkpoint without a classifier or MLM
  // head gets output "none" / no head).
  void (*params)(ModelConfig& c, TensorSource& src, ParamStore& out);
  bool (*skippable)(const std::string& name);  // buffers and heads deliberately not loaded
  // Saved buffers no mapping ever reads: not even converted from the file (null: none).
  bool (*unread)(const std::string& name) = nullptr;
  // F16 / BF16 matrices the mapping takes as they are stored (read in place by the products,
  // never converted to float32 as a whole; null: every tensor is converted).
  bool (*keep_encoded)(const std::string& name) = nullptr;
};

Family gpt2_family();        // hf_gpt2.cpp
Family bert_family();        // hf_bert.cpp
Family distilbert_family();  // hf_bert.cpp
Family vit_family();         // hf_vit.cpp
std::vector<Family> llama_families();  // hf_llama.cpp: llama, mistral, qwen2, gemma, phi3
const std::vector<Family>& families();  // hf_config.cpp

// config.json read, its family's mapping applied, tokenizer files read (hf_config.cpp).
struct ConfigStage {
  ModelConfig config;
  const Family* family = nullptr;
  std::string config_path;
};
ConfigStage read_config_stage(const std::string& dir, const HfLoadOptions& options);
std::string read_text(const std::string& path);  // whole file; AtlasError naming it

}  // namespace atlas::hf
