#include "dump.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "error.h"
#include "npy.h"

namespace atlas {

namespace fs = std::filesystem;

namespace {

nlohmann::json tokens_json(const std::vector<TokenInfo>& tokens) {
  nlohmann::json out = nlohmann::json::array();
  for (size_t i = 0; i < tokens.size(); ++i)
    out.push_back({{"index", i}, {"id", tokens[i].id}, {"label", tokens[i].label}});
  return out;
}

}  // namespace

void write_dump(const std::string& dir, const Model& model, const RunResult& result) {
  write_trace_dump(dir, model.config().name, result.trace);
}

void write_trace_dump(const std::string& dir, const std::string& name, const Trace& trace) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw AtlasError(dir + ": cannot create dump directory: " + ec.message());
  nlohmann::json manifest;
  manifest["format"] = "attention-atlas-dump";
  manifest["version"] = 1;
  manifest["model"] = name;
  manifest["tokens"] = tokens_json(trace.source_tokens);
  if (!trace.target_tokens.empty()) manifest["target_tokens"] = tokens_json(trace.target_tokens);
  nlohmann::json arrays = nlohmann::json::array();
  for (const auto& a : trace.arrays) {
    const std::string file = a.name + ".npy";
    write_npy((fs::path(dir) / file).string(), a.tensor, a.dtype);
    arrays.push_back({{"name", a.name},
                      {"file", file},
                      {"shape", a.tensor.shape},
                      {"dtype", a.dtype == DType::F32 ? "float32" : "int32"},
                      {"meaning", a.meaning}});
  }
  manifest["arrays"] = arrays;
  std::ofstream out(fs::path(dir) / "manifest.json", std::ios::binary);
  // error_handler replace: labels are valid UTF-8 by contract, but never fail a dump on one.
  out << manifest.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  if (!out) throw AtlasError(dir + "/manifest.json: write failed");
}

}  // namespace atlas
